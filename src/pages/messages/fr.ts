import type { Messages } from './types.js'

/** French. */
export const fr: Messages = {
  busyTitle: 'Affluence, merci de patienter',
  busyHeading: 'Beaucoup de visiteurs en ce moment',
  busyText: 'Nous faisons entrer les visiteurs quelques-uns à la fois pour que le site reste disponible.',
  busyShare:
    'De nombreuses nouvelles visites arrivent en même temps depuis votre adresse réseau : celle-ci attend donc son tour.',
  retryIn: 'Cette page réessaiera d’elle-même dans {seconds} s.',
  tryNow: 'Réessayer maintenant',
  inLine: 'Vous êtes dans la file d’attente',
  place: 'Votre place dans la file : {position} sur {waiting}',
  eta: 'Attente estimée : {eta}',
  etaAbout: 'environ {time}',
  etaUnknown: 'calcul en cours',
  lottery: 'Personnes en attente : {waiting}. Les entrées sont tirées au sort : gardez simplement cette page ouverte.',
  keepOpen:
    'Cette page se met à jour toute seule et vous mènera sur le site dès que ce sera votre tour. Merci de la garder ouverte.',
  leave: 'Quitter la file d’attente',
  notify: 'Me prévenir quand ce sera mon tour',
  turn: 'C’est votre tour',
  leftTitle: 'Vous avez quitté la file d’attente',
  leftText: 'Votre place a été donnée à la personne suivante. Vous pouvez fermer cet onglet.',
  joinAgain: 'Reprendre une place (en fin de file)',
  openingSoon: 'Ouverture imminente',
  opensIn: 'Le site ouvre dans {eta} ({time}).',
  openingDraw:
    'Toutes les personnes arrivées avant l’ouverture recevront alors une place tirée au sort : arriver tôt ne donne donc aucun avantage.',
  openingWaiting: 'Personnes en attente : {waiting}.',
  momentTitle: 'Un instant',
  checkingIntro: 'Nous vérifions votre navigateur avant de vous placer dans la file ; cela ne prend qu’une seconde.',
  checking: 'Vérification de votre navigateur…',
  checkingProgress: 'Vérification de votre navigateur… {percent}',
  joining: 'C’est fait, entrée dans la file…',
  noscriptJoin: 'Cette page vous placera d’elle-même dans la file dans {seconds} s.',
  badGatewayTitle: 'Site indisponible',
  badGatewayHeading: 'Le site ne répond pas',
  badGatewayText: 'Son serveur n’a pas répondu.',
  timeoutTitle: 'Site trop lent',
  timeoutHeading: 'Le site met trop de temps à répondre',
  timeoutText: 'Son serveur n’a pas répondu à temps.',
}
