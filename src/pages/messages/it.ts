import type { Messages } from './types.js'

/** Italian. */
export const it: Messages = {
  busyTitle: 'Molte richieste, attenda un momento',
  busyHeading: 'In questo momento ci sono molti visitatori',
  busyText: 'Facciamo entrare poche persone alla volta, così il sito resta disponibile.',
  busyShare:
    'Molte nuove visite arrivano contemporaneamente dal tuo indirizzo di rete, quindi questa attende il suo turno.',
  retryIn: 'Questa pagina riproverà da sola tra {seconds} s.',
  tryNow: 'Riprova ora',
  inLine: 'È in coda',
  place: 'Il suo posto in coda: {position} su {waiting}',
  eta: 'Attesa stimata: {eta}',
  etaAbout: 'circa {time}',
  etaUnknown: 'in calcolo',
  lottery: 'Persone in attesa: {waiting}. L’accesso avviene per sorteggio, quindi tenga aperta questa pagina.',
  keepOpen:
    'Questa pagina si aggiorna da sola e la porterà al sito quando sarà il suo turno. La tenga aperta, per favore.',
  leave: 'Uscire dalla coda',
  notify: 'Avvisami quando tocca a me',
  turn: 'È il suo turno',
  leftTitle: 'Ha lasciato la coda',
  leftText: 'Il suo posto è passato alla persona successiva. Può chiudere questa scheda.',
  joinAgain: 'Rimettersi in coda (in fondo)',
  openingSoon: 'Apertura a breve',
  opensIn: 'Il sito apre tra {eta} ({time}).',
  openingDraw:
    'A chi arriva prima dell’apertura verrà assegnato un posto estratto a sorte, quindi arrivare prima non dà alcun vantaggio.',
  openingWaiting: 'Persone in attesa: {waiting}.',
  momentTitle: 'Un momento',
  checkingIntro: 'Stiamo verificando il suo browser prima di metterla in coda: ci vuole solo un secondo.',
  checking: 'Verifica del browser in corso…',
  checkingProgress: 'Verifica del browser in corso… {percent}',
  joining: 'Fatto, la stiamo mettendo in coda…',
  noscriptJoin: 'Questa pagina la metterà in coda da sola tra {seconds} s.',
  badGatewayTitle: 'Sito non disponibile',
  badGatewayHeading: 'Il sito non risponde',
  badGatewayText: 'Il server del sito non ha risposto.',
  timeoutTitle: 'Sito troppo lento',
  timeoutHeading: 'Il sito ci sta mettendo troppo',
  timeoutText: 'Il server del sito non ha risposto in tempo.',
}
