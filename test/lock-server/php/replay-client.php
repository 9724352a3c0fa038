<?php
/*
 * A replay of the Small Resource Server PHP client's protocol, written for these tests (not that client's
 * code): the same requests (methods, paths, query, headers), the same reading of answers (the ticket taken
 * from the `X-Ticket` header case-sensitively, reads decoded from the `data` field, a JSON string, 202 as
 * "a waiting ticket"), on Symfony's HttpClient as the real client uses it. It runs its quick start.
 * Usage: php replay-client.php <service url> <write key> <resource name>
 */
declare(strict_types=1);
require __DIR__ . '/bootstrap.php';

use Symfony\Contracts\HttpClient\HttpClientInterface;
use Symfony\Contracts\HttpClient\ResponseInterface;

final class WaitingTicket extends RuntimeException {}

final class ReplayResource
{
    private ?string $ticket = null;

    public function __construct(private readonly string $name, private readonly HttpClientInterface $http) {}

    private function headers(array $extra = []): array
    {
        return ($this->ticket ? ['X-Ticket' => $this->ticket] : []) + $extra;
    }

    private function keepTicket(ResponseInterface $r): void
    {
        $headers = $r->getHeaders(false);
        if (isset($headers['X-Ticket'][0])) $this->ticket = $headers['X-Ticket'][0]; // case-sensitive, as the client
    }

    private function path(string $selector, string $tail = ''): string
    {
        return sprintf('/resource/%s/%s%s', rawurlencode($this->name), rawurlencode($selector), $tail);
    }

    public function lockData(string $selector): bool
    {
        $r = $this->http->request('PUT', $this->path($selector, '/lock'), ['headers' => $this->headers()]);
        $this->keepTicket($r);
        if ($r->getStatusCode() !== 200) return false;
        $body = json_decode($r->getContent(false), true);
        if (!is_array($body) || !is_bool($body['locked'] ?? null)) throw new RuntimeException('Bad response body');
        return $body['locked'];
    }

    public function getData(string $selector, bool $lock): mixed
    {
        $r = $this->http->request('GET', $this->path($selector), ['query' => ['lock' => $lock ? 1 : 0], 'headers' => $this->headers()]);
        $this->keepTicket($r);
        $status = $r->getStatusCode();
        if ($status === 202) throw new WaitingTicket('A waiting ticket have been returned');
        if ($status !== 200) throw new RuntimeException("getData: HTTP $status");
        $decoded = json_decode($r->getContent(false), true);
        if (!is_array($decoded) || !array_key_exists('data', $decoded) || !is_string($decoded['data'])) {
            throw new RuntimeException('Invalid JSON returned by resource server: data must be a JSON string');
        }
        return json_decode($decoded['data'], true, 512, JSON_THROW_ON_ERROR);
    }

    public function writeData(string $selector, mixed $data): bool
    {
        $r = $this->http->request('PUT', $this->path($selector), [
            'headers' => $this->headers(['content-type' => 'application/json']),
            'body' => json_encode($data, JSON_THROW_ON_ERROR),
        ]);
        if (!in_array($r->getStatusCode(), [200, 204], true)) throw new RuntimeException('writeData: HTTP ' . $r->getStatusCode());
        return true;
    }

    public function unlockData(string $selector): bool
    {
        $r = $this->http->request('PUT', $this->path($selector, '/unlock'), ['headers' => $this->headers()]);
        if ($r->getStatusCode() !== 200) throw new RuntimeException('unlockData: HTTP ' . $r->getStatusCode());
        return true;
    }
}

[, $url, $key, $name] = $argv;
$http = httpClient()->withOptions(['base_uri' => rtrim($url, '/'), 'headers' => ['accept' => 'application/json', 'x-api-key' => $key], 'timeout' => 60]);
$created = $http->request('POST', '/resource', ['json' => ['name' => $name, 'timeout' => 30]])->getStatusCode();
if (!in_array($created, [200, 201], true)) throw new RuntimeException("create: HTTP $created");

$out = [];
$a = new ReplayResource($name, $http);
$out['aLocked'] = $a->lockData('queue');
$out['aData'] = $a->getData('queue', true);
$b = new ReplayResource($name, $http);
$out['bLocked'] = $b->lockData('queue');
try {
    $b->getData('queue', true);
    $out['bWaited'] = false;
} catch (WaitingTicket) {
    $out['bWaited'] = true;
}
$out['aWrote'] = $a->writeData('queue', ['qty' => 5]);
$out['aUnlocked'] = $a->unlockData('queue');
$out['bData'] = $b->getData('queue', true);
$out['bUnlocked'] = $b->unlockData('queue');
$c = new ReplayResource($name, $http);
$out['cLocked'] = $c->lockData('queue');
$out['cUnlocked'] = $c->unlockData('queue');
echo json_encode($out), "\n";
