// An API client of a gate with `queue: { challenge: true }`: solves the proof-of-work challenge and
// asks again with the gate's cookies. Usage: node examples/pow-client.mjs <url>
import { createHash } from 'node:crypto'

const [url = 'http://127.0.0.1:3000/', jar] = [process.argv[2], new Map()]
async function get(headers = {}) {
  const cookie = [...jar].map(([name, value]) => `${name}=${value}`).join('; ')
  const r = await fetch(url, { headers: { accept: 'application/json', cookie, ...headers } })
  for (const c of r.headers.getSetCookie())
    jar.set(c.slice(0, c.indexOf('=')), c.slice(c.indexOf('=') + 1).split(';')[0])
  return { status: r.status, body: await r.json().catch(() => null) }
}
const zeroBits = (d) => d.reduce((n, b, i) => (n < 8 * i ? n : n + (b ? Math.clz32(b) - 24 : 8)), 0)
let answer = await get()
if (answer.status === 202 && answer.body?.status === 'challenge') {
  const { challenge, difficulty } = answer.body
  let nonce = 0 // SHA-256(challenge + ':' + nonce) must start with `difficulty` zero bits:
  while (zeroBits(createHash('sha256').update(`${challenge}:${nonce}`).digest()) < difficulty) nonce++
  answer = await get({ 'x-airlock-solution': `${challenge} ${nonce}` })
}
console.log(answer.status, answer.body)
