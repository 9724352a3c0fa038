/**
 * The words of the built-in pages: one {@link Messages} object per language. A `{name}` in a
 * message is a placeholder the page fills in (a number formatted for the language, an element the
 * page's script updates); a translation keeps every placeholder of the English message.
 */

/** Every message of the built-in pages, in one language. */
export interface Messages {
  /** Busy page (503): the title. */
  busyTitle: string
  /** Busy page: the heading. */
  busyHeading: string
  /** Busy page: why the visitor waits. */
  busyText: string
  /** Busy page, refused for its client's share (`clientShare`): too many new visits from one address. */
  busyShare: string
  /** Busy page and the proxy's 502/504 pages: `{seconds}` is the countdown (whole seconds). */
  retryIn: string
  /** Busy page and the proxy's pages: the link that loads the page again now. */
  tryNow: string
  /** Waiting page (202): the title and heading. */
  inLine: string
  /** Waiting page: `{position}` the visitor's place, `{waiting}` the people in line. */
  place: string
  /** Waiting page: `{eta}` the estimated wait ({@link etaAbout} or {@link etaUnknown}). */
  eta: string
  /** The estimated wait: `{time}` a duration in the language's words (`3 minutes`, `3 Minuten`). */
  etaAbout: string
  /** The estimated wait while no admission rate is known yet. */
  etaUnknown: string
  /** Waiting page in random order (a lottery): `{waiting}` the people in line. */
  lottery: string
  /** Waiting page: the page keeps itself up to date. */
  keepOpen: string
  /** Waiting page: the button that gives the place up. */
  leave: string
  /** Waiting page: the toggle that asks to be told (a notification, else a beep) when admitted in a background tab. */
  notify: string
  /** The waiting tab's title once admitted while in the background (shown as `✓ <turn> – <site>`). */
  turn: string
  /** After leaving: the title and heading. */
  leftTitle: string
  /** After leaving: what happened, and that the tab can be closed. */
  leftText: string
  /** After leaving: the link back into the line (at the back). */
  joinAgain: string
  /** Waiting page before a scheduled opening: the title and heading. */
  openingSoon: string
  /** Before the opening: `{eta}` the time left, `{time}` the opening's date and time. */
  opensIn: string
  /** Before the opening: places are drawn at random at the opening. */
  openingDraw: string
  /** Before the opening: `{waiting}` the people waiting. */
  openingWaiting: string
  /** Challenge page: the title and heading. */
  momentTitle: string
  /** Challenge page: what happens. */
  checkingIntro: string
  /** Challenge page: the status line while the browser works. */
  checking: string
  /** Challenge page: the status line with the progress, `{percent}` (`42 %`). */
  checkingProgress: string
  /** Challenge page: the status line once solved. */
  joining: string
  /** Challenge page without JavaScript: `{seconds}` until it joins the line by itself. */
  noscriptJoin: string
  /** The proxy's 502 page: the title. */
  badGatewayTitle: string
  /** The proxy's 502 page: the heading. */
  badGatewayHeading: string
  /** The proxy's 502 page: what happened. */
  badGatewayText: string
  /** The proxy's 504 page: the title. */
  timeoutTitle: string
  /** The proxy's 504 page: the heading. */
  timeoutHeading: string
  /** The proxy's 504 page: what happened. */
  timeoutText: string
}

/** A message's key. */
export type MessageKey = keyof Messages

const KEYS = [
  'busyTitle',
  'busyHeading',
  'busyText',
  'busyShare',
  'retryIn',
  'tryNow',
  'inLine',
  'place',
  'eta',
  'etaAbout',
  'etaUnknown',
  'lottery',
  'keepOpen',
  'leave',
  'notify',
  'turn',
  'leftTitle',
  'leftText',
  'joinAgain',
  'openingSoon',
  'opensIn',
  'openingDraw',
  'openingWaiting',
  'momentTitle',
  'checkingIntro',
  'checking',
  'checkingProgress',
  'joining',
  'noscriptJoin',
  'badGatewayTitle',
  'badGatewayHeading',
  'badGatewayText',
  'timeoutTitle',
  'timeoutHeading',
  'timeoutText',
] as const satisfies readonly MessageKey[]
// And every key is in the list (a key added to Messages but not here fails to compile).
type Unlisted = Exclude<MessageKey, (typeof KEYS)[number]>
const _everyKeyListed: [Unlisted] extends [never] ? true : Unlisted = true
void _everyKeyListed

/** Every key of {@link Messages}, in the order above. */
export const MESSAGE_KEYS: readonly MessageKey[] = KEYS

/** The placeholders of a message: `{position}`, `{waiting}`, ... */
export function placeholders(text: string): string[] {
  return [...text.matchAll(/\{([a-z]+)\}/g)].map((m) => m[1]!).sort()
}
