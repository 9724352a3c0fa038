import { describe, expect, it } from 'vitest'
import { isAirlockError } from '../../src/base/errors.js'
import { BUSY_PAGE_SCRIPT, renderBusyPage } from '../../src/pages/busy.js'
import { Challenges, challengeSettings } from '../../src/gate/challenge.js'
import { CHALLENGE_PAGE_SCRIPT, renderChallengePage } from '../../src/pages/challenge.js'
import { ENGLISH, PageLanguages } from '../../src/pages/language.js'
import { BUILT_IN_MESSAGES, MESSAGE_KEYS, placeholders, type Messages } from '../../src/pages/messages/index.js'
import { originErrorPage } from '../../src/pages/origin.js'
import { renderWaitingPage, WAITING_PAGE_SCRIPT } from '../../src/pages/waiting.js'

const en = BUILT_IN_MESSAGES.en!
const languages = new PageLanguages()
const nonce = 'a-long-nonce-value-0123456789abcdef0123456789'
const issued = new Challenges('g'.repeat(64), ['s'.repeat(40)], challengeSettings(true)!).issue(
  'visitor',
  Date.now(),
  17,
)
const waiting = {
  order: 'fifo' as const,
  position: 1234,
  waiting: 5678,
  eta: 150,
  pollInterval: 2000,
  keepAliveInterval: 8000,
  nonce: undefined,
}

/** The ERR_AIRLOCK_OPTION message of `fn`, or 'no error'. */
function optionMessage(fn: () => unknown): string {
  try {
    fn()
    return 'no error'
  } catch (err) {
    expect(isAirlockError(err, 'ERR_AIRLOCK_OPTION')).toBe(true)
    return (err as Error).message
  }
}

describe('the built-in catalogue', () => {
  it('has at least 12 languages, those asked for among them', () => {
    const tags = Object.keys(BUILT_IN_MESSAGES)
    expect(tags.length).toBeGreaterThanOrEqual(12)
    for (const tag of ['en', 'de', 'fr', 'es', 'it', 'pt', 'nl', 'pl', 'tr', 'ru', 'uk', 'ar', 'he', 'zh', 'ja'])
      expect(tags).toContain(tag)
  })

  it('every language has every message, non-empty, with the English placeholders', () => {
    for (const [tag, messages] of Object.entries(BUILT_IN_MESSAGES)) {
      expect(Object.keys(messages).sort(), tag).toEqual([...MESSAGE_KEYS].sort())
      for (const key of MESSAGE_KEYS) {
        expect(messages[key].trim(), `${tag}.${key}`).not.toBe('')
        expect(placeholders(messages[key]), `${tag}.${key}`).toEqual(placeholders(en[key]))
        expect(messages[key], `${tag}.${key}`).not.toMatch(/[<>&"]/)
      }
    }
  })

  it('no English message is left in another language', () => {
    for (const [tag, messages] of Object.entries(BUILT_IN_MESSAGES)) {
      if (tag === 'en') continue
      for (const key of MESSAGE_KEYS) expect(messages[key], `${tag}.${key}`).not.toBe(en[key])
    }
  })
})

describe('pages in every language', () => {
  it('say their language and direction; stay small; the scripts are the same in every language', () => {
    for (const tag of languages.tags) {
      const l = languages.get(tag)!
      const dir = tag === 'ar' || tag === 'he' ? 'rtl' : 'ltr'
      expect(l.dir, tag).toBe(dir)
      const busy = renderBusyPage(120, nonce, l)
      const line = renderWaitingPage(
        { ...waiting, position: 99_999_999, waiting: 99_999_999, eta: 9_999_999, nonce },
        l,
      )
      const opening = renderWaitingPage({ ...waiting, position: null, nonce, opensAt: Date.UTC(2030, 0, 1) }, l)
      // The longest gate name's challenge (64 characters), as in test/browser/challenge.test.ts.
      const challenge = renderChallengePage({ ...issued, noscriptDelay: 15_000, nonce: undefined }, l)
      for (const html of [busy, line, opening, challenge, originErrorPage(502, l), originErrorPage(504, l)]) {
        expect(html, tag).toMatch(new RegExp(`^<!doctype html><html lang="${tag}" dir="${dir}">`))
        expect(html, tag).not.toMatch(/\{[a-z]+\}(?![^<]*")/) // every placeholder filled (data- templates aside)
      }
      expect(Buffer.byteLength(busy), tag).toBeLessThan(2048)
      expect(Buffer.byteLength(line), tag).toBeLessThan(4096)
      expect(Buffer.byteLength(opening), tag).toBeLessThan(4096)
      expect(Buffer.byteLength(challenge), tag).toBeLessThan(3584)
      expect(busy).toContain(BUSY_PAGE_SCRIPT)
      expect(line).toContain(WAITING_PAGE_SCRIPT)
      expect(challenge).toContain(CHALLENGE_PAGE_SCRIPT)
    }
  })

  it('German: the words, numbers and waits in German', () => {
    const de = languages.pick('de-AT,de;q=0.9,en;q=0.5')
    expect(de.tag).toBe('de')
    const page = renderWaitingPage(waiting, de)
    expect(page).toContain('Ihr Platz in der Warteschlange: <b id="p">1.234</b> von <span id="w">5.678</span>')
    expect(page).toContain('Voraussichtliche Wartezeit: <span id="e">etwa 3 Minuten</span>')
    expect(page).toContain('data-about="etwa {time}" data-unknown="wird berechnet"')
    expect(renderBusyPage(5, undefined, de)).toContain('<h1>Gerade ist sehr viel los</h1>')
    expect(de.eta(1)).toBe('etwa 1 Sekunde')
    expect(de.eta(null)).toBe('wird berechnet')
    expect(languages.pick('pl').eta(180)).toBe('mniej więcej 3 minuty')
    expect(languages.pick('ru').eta(300)).toBe('примерно 5 минут')
  })

  it('English without a header, for an unknown language, and by default', () => {
    expect(languages.pick(undefined)).toBe(languages.fallback)
    expect(languages.pick('xx')).toBe(languages.fallback)
    expect(languages.pick('xx').tag).toBe('en')
    expect(renderBusyPage(5)).toMatch(/^<!doctype html><html lang="en" dir="ltr">/)
    expect(ENGLISH.messages).toEqual(en)
  })

  it('escapes words given in the messages option', () => {
    const custom = new PageLanguages({ de: { busyHeading: '<b>Hochbetrieb</b> & "mehr"' } })
    expect(renderBusyPage(5, undefined, custom.pick('de'))).toContain(
      '<h1>&#60;b&#62;Hochbetrieb&#60;/b&#62; &#38; &#34;mehr&#34;</h1>',
    )
  })
})

describe('the messages option', () => {
  it('changes words of a language, adds a regional one inheriting the rest, adds a new one', () => {
    const sv: Messages = { ...en, busyHeading: 'Många besökare just nu' }
    for (const key of MESSAGE_KEYS) if (key !== 'busyHeading') sv[key] = `${en[key]} (sv)`
    const custom = new PageLanguages({
      de: { busyHeading: 'Hochbetrieb' },
      'pt-br': { inLine: 'Você está na fila' },
      sv,
    })
    expect(custom.pick('de').messages.busyHeading).toBe('Hochbetrieb')
    expect(custom.pick('de').messages.busyTitle).toBe(BUILT_IN_MESSAGES.de!.busyTitle)
    const br = custom.pick('pt-BR')
    expect(br.tag).toBe('pt-BR')
    expect(br.messages.inLine).toBe('Você está na fila')
    expect(br.messages.busyTitle).toBe(BUILT_IN_MESSAGES.pt!.busyTitle)
    expect(custom.pick('pt-PT').tag).toBe('pt')
    expect(custom.pick('sv-SE').messages.busyHeading).toBe('Många besökare just nu')
    expect(new PageLanguages().pick('sv').tag).toBe('en')
  })

  it('refuses what it cannot use, naming the language and the key', () => {
    expect(optionMessage(() => new PageLanguages('de'))).toMatch(/^messages must be an object of languages/)
    expect(optionMessage(() => new PageLanguages([]))).toMatch(/^messages must be an object of languages/)
    expect(optionMessage(() => new PageLanguages({ de_DE: {} }))).toBe(
      "messages: 'de_DE' is not a language tag such as 'de', 'pt-BR' or 'zh-Hant'",
    )
    expect(optionMessage(() => new PageLanguages({ german: {} }))).toMatch(/'german' is not a language tag/)
    expect(optionMessage(() => new PageLanguages({ de: 'Hallo' }))).toMatch(
      /^messages\.de must be an object of messages/,
    )
    expect(optionMessage(() => new PageLanguages({ de: { busyTitel: 'x' } }))).toMatch(
      /^messages\.de has no option 'busyTitel' \(did you mean 'busyTitle'\?\)/,
    )
    expect(optionMessage(() => new PageLanguages({ de: { busyTitle: '' } }))).toMatch(
      /^messages\.de\.busyTitle must be a non-empty string/,
    )
    expect(optionMessage(() => new PageLanguages({ de: { busyTitle: 5 } }))).toMatch(
      /^messages\.de\.busyTitle must be a non-empty string/,
    )
    expect(optionMessage(() => new PageLanguages({ de: { place: 'Platz {position}' } }))).toBe(
      'messages.de.place must contain {position} and {waiting} (each once; the page fills them in), got "Platz {position}"',
    )
    expect(optionMessage(() => new PageLanguages({ de: { busyTitle: 'Warten {x}' } }))).toMatch(
      /^messages\.de\.busyTitle must contain no placeholder/,
    )
    expect(optionMessage(() => new PageLanguages({ sv: { busyTitle: 'Vänta lite' } }))).toMatch(
      /^messages\.sv adds a new language, so it needs every message; missing 'busyHeading', 'busyText', /,
    )
    expect(optionMessage(() => new PageLanguages({ de: {}, DE: {} }))).toMatch(/names the language 'de' twice/)
  })
})
