/**
 * The language of a built-in page: the catalogue (the built-in languages and the gate's `messages`
 * option, checked at startup), the choice by `Accept-Language` (base/language.ts), and what a page
 * needs of its language: `lang` and `dir`, its words, numbers and durations formatted by `Intl`.
 */
import { optionError } from '../base/errors.js'
import { canonicalTag, negotiateLanguage, rightToLeft } from '../base/language.js'
import { received, knownKeys } from '../base/validate.js'
import { escapeHtml } from './csp.js'
import {
  BUILT_IN_MESSAGES,
  DEFAULT_LANGUAGE,
  MESSAGE_KEYS,
  placeholders,
  type MessageKey,
  type Messages,
} from './messages/index.js'
import { en } from './messages/en.js'

/** The `messages` option: languages to add or words to change, by language tag. */
export type MessagesOption = Readonly<Record<string, Partial<Messages>>>

/** Longest message accepted in the `messages` option (characters). */
export const MAX_MESSAGE_LENGTH = 500

/**
 * The visitor's language as a custom page receives it (`busyPage`, `queue.page`): the language the
 * gate negotiated from `Accept-Language` over its catalogue, so a custom page can speak it too.
 */
export interface VisitorLanguage {
  /** The language tag (`de`, `pt-BR`), as sent in `Content-Language`: for `<html lang>`. */
  readonly tag: string
  /** `ltr` or `rtl` (Arabic, Hebrew, ...): for `<html dir>`. */
  readonly dir: 'ltr' | 'rtl'
  /** The built-in pages' words in this language (with the `messages` option applied). */
  readonly messages: Readonly<Messages>
  /** Message `key` as HTML (escaped), its `{name}` placeholders replaced by `values` (HTML, inserted as is). */
  html(key: MessageKey, values?: Record<string, string>): string
  /** A whole number in the language's digits and grouping (`12.345` in German). */
  number(n: number): string
  /** `31 seconds`, `3 minutes` in the language's words (plural forms included). */
  duration(seconds: number): string
  /** An estimated wait: `about 31 seconds`, or `working it out` while unknown (`null`). Plain text. */
  eta(seconds: number | null): string
}

/** One language of the catalogue, with what its pages need. */
export class PageLanguage implements VisitorLanguage {
  /** `ltr` or `rtl`. */
  readonly dir: 'ltr' | 'rtl'
  /** ` lang="de" dir="ltr"`: the attributes of `<html>`. */
  readonly htmlAttributes: string
  #number: Intl.NumberFormat | undefined
  #units: Map<string, Intl.NumberFormat> | undefined
  #date: Intl.DateTimeFormat | undefined

  constructor(
    /** The language tag, as sent in `Content-Language`. */
    readonly tag: string,
    /** Its words. */
    readonly messages: Readonly<Messages>,
  ) {
    this.dir = rightToLeft(tag) ? 'rtl' : 'ltr'
    this.htmlAttributes = ` lang="${tag}" dir="${this.dir}"`
  }

  /** Message `key` as HTML (escaped), its `{name}` placeholders replaced by `values` (HTML, inserted as is). */
  html(key: MessageKey, values: Record<string, string> = {}): string {
    return escapeHtml(this.messages[key]).replace(/\{([a-z]+)\}/g, (whole, name: string) => values[name] ?? whole)
  }

  /** A whole number in the language's digits and grouping (`12.345` in German). */
  number(n: number): string {
    this.#number ??= new Intl.NumberFormat(this.tag, { maximumFractionDigits: 0 })
    return this.#number.format(n)
  }

  /** `31 seconds`, `3 minutes` in the language's words (plural forms included). */
  duration(seconds: number): string {
    const [unit, n] = seconds < 60 ? ['second', seconds] : ['minute', Math.round(seconds / 60)]
    this.#units ??= new Map()
    let format = this.#units.get(unit)
    if (format === undefined)
      this.#units.set(unit, (format = new Intl.NumberFormat(this.tag, { style: 'unit', unit, unitDisplay: 'long' })))
    return format.format(n)
  }

  /** An estimated wait: `about 31 seconds`, or `working it out` while unknown (`null`). Plain text. */
  eta(seconds: number | null): string {
    return seconds === null
      ? this.messages.etaUnknown
      : this.messages.etaAbout.replace('{time}', this.duration(seconds))
  }

  /** A moment (ms since the epoch) as a date and time, in UTC. */
  date(at: number): string {
    this.#date ??= new Intl.DateTimeFormat(this.tag, { dateStyle: 'medium', timeStyle: 'long', timeZone: 'UTC' })
    return this.#date.format(at)
  }
}

/** English, the pages' default (without a catalogue: a page rendered by itself). */
export const ENGLISH = new PageLanguage('en', en)

/** Most `Accept-Language` values whose choice is remembered (a crowd's browsers send few distinct ones). */
const CHOICES_MAX = 256

/**
 * The catalogue of one gate (or proxy): the built-in languages with the `messages` option applied.
 * {@link pick} chooses a visitor's language; call it only when a page is rendered.
 */
export class PageLanguages {
  readonly #languages = new Map<string, PageLanguage>()
  readonly #tags: string[]
  readonly #choices = new Map<string, PageLanguage>()
  /** The fallback (English). */
  readonly fallback: PageLanguage

  /** Throws `ERR_AIRLOCK_OPTION` naming the language and the key of a bad `messages` option. */
  constructor(option?: unknown) {
    const added = checkMessages(option)
    for (const [tag, messages] of Object.entries(BUILT_IN_MESSAGES))
      this.#languages.set(tag.toLowerCase(), new PageLanguage(tag, { ...messages, ...added.get(tag) }))
    // Added languages in order of their tags' length, so `pt-BR` finds `pt` (built in or added) to inherit from.
    for (const [tag, messages] of [...added].sort(([a], [b]) => a.length - b.length)) {
      if (this.#languages.has(tag.toLowerCase())) continue
      const parent = this.parentOf(tag)
      this.#languages.set(tag.toLowerCase(), new PageLanguage(tag, { ...parent?.messages, ...messages } as Messages))
    }
    this.#tags = [...this.#languages.values()].map((l) => l.tag)
    this.fallback = this.#languages.get(DEFAULT_LANGUAGE)!
  }

  /** Every language's tag. */
  get tags(): readonly string[] {
    return this.#tags
  }

  /** The language of `tag` (any case), if in the catalogue. */
  get(tag: string): PageLanguage | undefined {
    return this.#languages.get(tag.toLowerCase())
  }

  /** The visitor's language by its `Accept-Language` header (English when none fits). Bounded work and memory. */
  pick(header: string | string[] | undefined): PageLanguage {
    if (header === undefined || header === '') return this.fallback
    if (typeof header !== 'string') return this.negotiate(header)
    let found = this.#choices.get(header)
    if (found === undefined) {
      found = this.negotiate(header)
      if (this.#choices.size >= CHOICES_MAX) this.#choices.clear()
      if (header.length <= 256) this.#choices.set(header, found)
    }
    return found
  }

  private negotiate(header: string | string[]): PageLanguage {
    return negotiateLanguage(
      header,
      (tag) => this.#languages.get(tag),
      { tag: DEFAULT_LANGUAGE, value: this.fallback },
      this.#tags,
    )
  }

  /** The nearest shorter tag of `tag` in the catalogue (`pt` for `pt-BR`). */
  private parentOf(tag: string): PageLanguage | undefined {
    for (let t = tag.toLowerCase(); t.includes('-'); ) {
      t = t.slice(0, t.lastIndexOf('-'))
      const found = this.#languages.get(t)
      if (found !== undefined) return found
    }
    return undefined
  }
}

/**
 * Checks the `messages` option: an object of language tags (`de`, `pt-BR`) to objects of messages.
 * Each message a non-empty string of at most {@link MAX_MESSAGE_LENGTH} characters with the same
 * placeholders as the English one; a language with no built-in or added language to inherit from
 * (by its shorter tags) gives every message. Answers the messages by canonical tag.
 */
export function checkMessages(option: unknown): Map<string, Partial<Messages>> {
  const found = new Map<string, Partial<Messages>>()
  if (option === undefined) return found
  if (option === null || typeof option !== 'object' || Array.isArray(option)) {
    optionError(
      `messages must be an object of languages such as { de: { busyHeading: '...' } }, got ${received(option)}`,
    )
  }
  const given = Object.entries(option as Record<string, unknown>)
  for (const [key, value] of given) {
    const tag = canonicalTag(key)
    if (tag === undefined) optionError(`messages: '${key}' is not a language tag such as 'de', 'pt-BR' or 'zh-Hant'`)
    if (found.has(tag)) optionError(`messages: '${key}' names the language '${tag}' twice`)
    if (value === null || typeof value !== 'object' || Array.isArray(value)) {
      optionError(
        `messages.${key} must be an object of messages such as { busyHeading: '...' }, got ${received(value)}`,
      )
    }
    knownKeys(`messages.${key}`, value, MESSAGE_KEYS)
    for (const [name, text] of Object.entries(value) as [MessageKey, unknown][]) {
      if (typeof text !== 'string' || text.trim() === '' || text.length > MAX_MESSAGE_LENGTH) {
        optionError(
          `messages.${key}.${name} must be a non-empty string of at most ${MAX_MESSAGE_LENGTH} characters, got ${received(text)}`,
        )
      }
      const wanted = placeholders(BUILT_IN_MESSAGES[DEFAULT_LANGUAGE]![name])
      if (placeholders(text).join() !== wanted.join()) {
        const list = wanted.length === 0 ? 'no placeholder' : wanted.map((p) => `{${p}}`).join(' and ')
        optionError(
          `messages.${key}.${name} must contain ${list} (each once; the page fills them in), got ${received(text)}`,
        )
      }
    }
    found.set(tag, value as Partial<Messages>)
  }
  const known = (tag: string): boolean => BUILT_IN_MESSAGES[tag] !== undefined || found.has(tag)
  for (const [tag, messages] of found) {
    let inherits = false
    for (let t = tag; t.includes('-') && !inherits; ) inherits = known((t = t.slice(0, t.lastIndexOf('-'))))
    if (inherits || BUILT_IN_MESSAGES[tag] !== undefined) continue
    const missing = MESSAGE_KEYS.filter((k) => !(k in messages))
    if (missing.length > 0) {
      optionError(
        `messages.${tag} adds a new language, so it needs every message; missing ${missing.map((k) => `'${k}'`).join(', ')}`,
      )
    }
  }
  return found
}
