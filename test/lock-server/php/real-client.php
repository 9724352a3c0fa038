<?php
/*
 * The quick start of the Small Resource Server's PHP client (sebk69's small-swoole-resource-client-bundle),
 * run with that client's own classes, unchanged, from SRS_CLIENT_DIR (its src/ directory; not part of this
 * repository). Usage: php real-client.php <service url> <write key> <resource name>
 */
declare(strict_types=1);
require __DIR__ . '/bootstrap.php';

$dir = getenv('SRS_CLIENT_DIR');
spl_autoload_register(function (string $class) use ($dir): void {
    $file = $dir . '/' . str_replace('\\', '/', $class) . '.php';
    if (is_file($file)) require $file;
});

use Small\SwooleResourceClientBundle\Exception\EmptyDataException;
use Small\SwooleResourceClientBundle\Resource\Factory;

[, $url, $key, $name] = $argv;
$factory = new Factory($url, $key, httpClient());
$out = [];

$a = $factory->createResource($name, 30);
$out['aLocked'] = $a->lockData('queue');
$out['aData'] = $a->getData('queue', true);
$b = $factory->getResource($name);
$out['bLocked'] = $b->lockData('queue');
try {
    $b->getData('queue', true);
    $out['bWaited'] = false;
} catch (EmptyDataException) {
    $out['bWaited'] = true; // 202: a waiting ticket was returned
}
$out['aWrote'] = $a->writeData('queue', ['qty' => 5]);
$out['aUnlocked'] = $a->unlockData('queue');
$out['bData'] = $b->getData('queue', true);
$out['bUnlocked'] = $b->unlockData('queue');
$c = $factory->getResource($name);
$out['cLocked'] = $c->lockData('queue');
$out['cUnlocked'] = $c->unlockData('queue');
echo json_encode($out), "\n";
