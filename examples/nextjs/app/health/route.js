// In the gate's bypass list: never gated.
export function GET() {
  return new Response('ok')
}
