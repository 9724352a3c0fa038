import type { Messages } from './types.js'

/** Portuguese. */
export const pt: Messages = {
  busyTitle: 'Muito movimento, aguarde um momento',
  busyHeading: 'Muitos visitantes neste momento',
  busyText: 'Deixamos entrar poucas pessoas de cada vez para manter o site no ar.',
  busyShare:
    'Muitas visitas novas estão chegando ao mesmo tempo do seu endereço de rede, então esta aguarda a sua vez.',
  retryIn: 'Esta página volta a tentar automaticamente dentro de {seconds} s.',
  tryNow: 'Tentar agora',
  inLine: 'Está na fila',
  place: 'O seu lugar na fila: {position} de {waiting}',
  eta: 'Espera estimada: {eta}',
  etaAbout: 'cerca de {time}',
  etaUnknown: 'em cálculo',
  lottery: 'Pessoas à espera: {waiting}. A entrada é por sorteio, por isso mantenha esta página aberta.',
  keepOpen:
    'Esta página é atualizada automaticamente e abre o site quando chegar a sua vez. Por favor, mantenha-a aberta.',
  leave: 'Sair da fila',
  notify: 'Avisar-me quando for a minha vez',
  turn: 'Chegou a sua vez',
  leftTitle: 'Saiu da fila',
  leftText: 'O seu lugar passou para a pessoa seguinte. Já pode fechar esta página.',
  joinAgain: 'Voltar à fila (no fim)',
  openingSoon: 'Abre em breve',
  opensIn: 'O site abre em {eta} ({time}).',
  openingDraw:
    'Quem chegar antes da abertura recebe nesse momento um lugar sorteado, por isso chegar mais cedo não dá vantagem.',
  openingWaiting: 'Pessoas à espera: {waiting}.',
  momentTitle: 'Só um momento',
  checkingIntro: 'Estamos a verificar o seu navegador antes de entrar na fila; demora apenas um segundo.',
  checking: 'Verificação do navegador…',
  checkingProgress: 'Verificação do navegador… {percent}',
  joining: 'Concluído, a entrar na fila…',
  noscriptJoin: 'Esta página entra na fila automaticamente dentro de {seconds} s.',
  badGatewayTitle: 'Site indisponível',
  badGatewayHeading: 'O site não responde',
  badGatewayText: 'O servidor do site não respondeu.',
  timeoutTitle: 'Site demasiado lento',
  timeoutHeading: 'O site está muito lento',
  timeoutText: 'O servidor do site não respondeu a tempo.',
}
