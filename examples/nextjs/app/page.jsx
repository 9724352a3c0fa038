// Rendered on each request: the gate decides per visit.
export const dynamic = 'force-dynamic'

export default function Home() {
  return <h1>Welcome in: you hold a pass.</h1>
}
