/**
 * A private CA and a server certificate it signed, made by openssl at test time
 * in a fresh temp directory: the server certificate names localhost and
 * 127.0.0.1, so a client checking against the CA (and only against it) accepts
 * a loopback server. A second, unrelated CA stands for "some other CA" in
 * tests that a certificate is refused.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export interface TestCertificates {
  readonly dir: string;
  /** The CA's certificate (what a client trusts). */
  readonly caFile: string;
  /** The server's certificate and key, signed by the CA. */
  readonly certFile: string;
  readonly keyFile: string;
  /** A CA that signed nothing here. */
  readonly otherCaFile: string;
}

function openssl(args: string[]): void {
  execFileSync('openssl', args, { stdio: ['ignore', 'ignore', 'pipe'] });
}

function selfSignedCa(dir: string, name: string): { cert: string; key: string } {
  const cert = path.join(dir, `${name}.crt`);
  const key = path.join(dir, `${name}.key`);
  openssl(['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '1', '-subj', `/CN=uhlp test ${name}`, '-keyout', key, '-out', cert]);
  return { cert, key };
}

/** `names`: more DNS names (wildcards too) the server certificate covers, beside localhost and 127.0.0.1. */
export function makeTestCertificates(names: readonly string[] = []): TestCertificates {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'uhlp-certs-'));
  const ca = selfSignedCa(dir, 'ca');
  const other = selfSignedCa(dir, 'other-ca');
  const keyFile = path.join(dir, 'server.key');
  const request = path.join(dir, 'server.csr');
  const certFile = path.join(dir, 'server.crt');
  const extensions = path.join(dir, 'server.ext');
  writeFileSync(extensions, `subjectAltName=${['DNS:localhost', 'IP:127.0.0.1', ...names.map((name) => `DNS:${name}`)].join(',')}\nextendedKeyUsage=serverAuth,clientAuth\n`);
  openssl(['req', '-new', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-subj', '/CN=localhost', '-keyout', keyFile, '-out', request]);
  openssl(['x509', '-req', '-in', request, '-CA', ca.cert, '-CAkey', ca.key, '-CAcreateserial', '-days', '1', '-extfile', extensions, '-out', certFile]);
  return { dir, caFile: ca.cert, certFile, keyFile, otherCaFile: other.cert };
}
