<?php
/*
 * Shared by the PHP clients of the lock service tests: Debian's Symfony HttpClient (php-symfony-http-client),
 * and a decorator that keeps response header names in the case the server sent, as the Swoole HTTP client
 * the Small Resource Server's PHP client is built for does (Symfony's clients lower-case them).
 */
declare(strict_types=1);

require_once '/usr/share/php/Symfony/Component/HttpClient/autoload.php';

use Symfony\Component\HttpClient\HttpClient;
use Symfony\Contracts\HttpClient\HttpClientInterface;
use Symfony\Contracts\HttpClient\ResponseInterface;
use Symfony\Contracts\HttpClient\ResponseStreamInterface;

final class CasePreservingResponse implements ResponseInterface
{
    public function __construct(private readonly ResponseInterface $inner) {}

    public function getStatusCode(): int { return $this->inner->getStatusCode(); }

    /** Header names as sent on the wire (from the raw response lines). */
    public function getHeaders(bool $throw = true): array
    {
        $this->inner->getHeaders($throw);
        $headers = [];
        foreach ($this->inner->getInfo('response_headers') as $line) {
            if (preg_match('/^([^:\s]+):\s*(.*)$/', $line, $m)) $headers[$m[1]][] = $m[2];
        }
        return $headers;
    }

    public function getContent(bool $throw = true): string { return $this->inner->getContent($throw); }
    public function toArray(bool $throw = true): array { return $this->inner->toArray($throw); }
    public function cancel(): void { $this->inner->cancel(); }
    public function getInfo(?string $type = null): mixed { return $this->inner->getInfo($type); }
}

final class CasePreservingClient implements HttpClientInterface
{
    public function __construct(private HttpClientInterface $inner) {}

    public function request(string $method, string $url, array $options = []): ResponseInterface
    {
        return new CasePreservingResponse($this->inner->request($method, $url, $options));
    }

    public function stream($responses, ?float $timeout = null): ResponseStreamInterface
    {
        return $this->inner->stream($responses, $timeout);
    }

    public function withOptions(array $options): static
    {
        $clone = clone $this;
        $clone->inner = $this->inner->withOptions($options);
        return $clone;
    }
}

function httpClient(): HttpClientInterface
{
    return new CasePreservingClient(HttpClient::create());
}
