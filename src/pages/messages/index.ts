/** The built-in catalogue: the pages' words in every language the package ships. */
import { ar } from './ar.js'
import { de } from './de.js'
import { en } from './en.js'
import { es } from './es.js'
import { fr } from './fr.js'
import { he } from './he.js'
import { it } from './it.js'
import { ja } from './ja.js'
import { nl } from './nl.js'
import { pl } from './pl.js'
import { pt } from './pt.js'
import { ru } from './ru.js'
import { tr } from './tr.js'
import { uk } from './uk.js'
import { zh } from './zh.js'
import type { Messages } from './types.js'

export { MESSAGE_KEYS, placeholders, type MessageKey, type Messages } from './types.js'

/** The language every page falls back to. */
export const DEFAULT_LANGUAGE = 'en'

/** Every built-in language, by tag (`zh`: Simplified Chinese). */
export const BUILT_IN_MESSAGES: Readonly<Record<string, Readonly<Messages>>> = Object.freeze({
  en,
  de,
  fr,
  es,
  it,
  pt,
  nl,
  pl,
  tr,
  ru,
  uk,
  ar,
  he,
  zh,
  ja,
})
