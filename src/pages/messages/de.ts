import type { Messages } from './types.js'

/** German. */
export const de: Messages = {
  busyTitle: 'Gerade viel los – bitte kurz warten',
  busyHeading: 'Gerade ist sehr viel los',
  busyText: 'Wir lassen immer nur einige Besucher gleichzeitig herein, damit die Website erreichbar bleibt.',
  busyShare:
    'Von Ihrer Netzwerkadresse kommen gerade viele neue Besuche gleichzeitig, daher wartet dieser, bis er an der Reihe ist.',
  retryIn: 'Diese Seite versucht es in {seconds} Sek. automatisch erneut.',
  tryNow: 'Jetzt erneut versuchen',
  inLine: 'Sie sind in der Warteschlange',
  place: 'Ihr Platz in der Warteschlange: {position} von {waiting}',
  eta: 'Voraussichtliche Wartezeit: {eta}',
  etaAbout: 'etwa {time}',
  etaUnknown: 'wird berechnet',
  lottery: 'Wartende: {waiting}. Der Einlass wird ausgelost – lassen Sie diese Seite einfach geöffnet.',
  keepOpen:
    'Diese Seite aktualisiert sich von selbst und bringt Sie zur Website, sobald Sie an der Reihe sind. Bitte lassen Sie sie geöffnet.',
  leave: 'Warteschlange verlassen',
  notify: 'Mich benachrichtigen, wenn ich an der Reihe bin',
  turn: 'Sie sind an der Reihe',
  leftTitle: 'Sie haben die Warteschlange verlassen',
  leftText: 'Ihr Platz wurde an die nächste Person weitergegeben. Sie können diesen Tab jetzt schließen.',
  joinAgain: 'Erneut anstellen (am Ende der Schlange)',
  openingSoon: 'Gleich geht es los',
  opensIn: 'Die Website öffnet in {eta} ({time}).',
  openingDraw:
    'Alle, die vor der Öffnung da sind, bekommen dann einen zufällig ausgelosten Platz – früher zu kommen bringt also keinen Vorteil.',
  openingWaiting: 'Wartende: {waiting}.',
  momentTitle: 'Einen Moment bitte',
  checkingIntro: 'Wir prüfen kurz Ihren Browser, bevor Sie sich einreihen – das dauert nur einen Augenblick.',
  checking: 'Ihr Browser wird geprüft …',
  checkingProgress: 'Ihr Browser wird geprüft … {percent}',
  joining: 'Fertig, Sie werden eingereiht …',
  noscriptJoin: 'Diese Seite reiht Sie in {seconds} Sek. automatisch ein.',
  badGatewayTitle: 'Website nicht erreichbar',
  badGatewayHeading: 'Die Website antwortet nicht',
  badGatewayText: 'Der Server der Website hat nicht reagiert.',
  timeoutTitle: 'Website zu langsam',
  timeoutHeading: 'Die Website braucht zu lange',
  timeoutText: 'Der Server der Website hat nicht rechtzeitig geantwortet.',
}
