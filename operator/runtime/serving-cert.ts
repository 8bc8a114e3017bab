// The certificate /metrics is served with: a mounted one (a kubernetes.io/tls Secret's tls.crt and
// tls.key in a folder, read again when they change, as controller-runtime's certwatcher does), or
// one made at start when none is given (kubebuilder's scaffold does the same; a scraper then skips
// verification, or pins nothing but the Service's name).
import { execFile } from 'node:child_process';
import { createPrivateKey, X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { generate } from 'selfsigned';

/** A key and certificate chain in PEM, and where they came from (for the log). */
export interface ServingCertificate {
  readonly key: string;
  readonly cert: string;
  /** "self-signed", or the folder they were read from. */
  readonly source: string;
}

/** File names in the folder: the keys of a kubernetes.io/tls Secret. */
export const CERT_FILE = 'tls.crt';
export const KEY_FILE = 'tls.key';

/**
 * Runs selfsigned's generate() in a short-lived Node process of its own and prints its PEMs as JSON:
 * selfsigned and the ASN.1 stack under it are ~200 modules, ~9 MiB of RSS the operator would keep
 * for the rest of its life to use once (a worker thread would leave most of it behind too).
 */
const GENERATE = `const [url, args] = JSON.parse(process.argv[1]);
import(url)
  .then(({ generate }) => generate(...args))
  .then((p) => process.stdout.write(JSON.stringify({ key: p.private, cert: p.cert })))
  .catch((e) => { process.stderr.write(String((e && e.stack) || e)); process.exitCode = 1; });`;

/** A self-signed certificate (ECDSA P-256, a year) for localhost, the loopback addresses and this host's name. */
export async function selfSignedCertificate(name = 'appkind-operator'): Promise<ServingCertificate> {
  const host = hostname();
  const args: Parameters<typeof generate> = [
    [{ name: 'commonName', value: name }],
    {
      keyType: 'ec',
      algorithm: 'sha256',
      extensions: [
        { name: 'basicConstraints', cA: false },
        { name: 'keyUsage', digitalSignature: true, critical: true },
        { name: 'extKeyUsage', serverAuth: true },
        {
          name: 'subjectAltName',
          altNames: [
            { type: 2, value: 'localhost' },
            ...(host && host !== 'localhost' ? [{ type: 2 as const, value: host }] : []),
            { type: 7, ip: '127.0.0.1' },
            { type: 7, ip: '::1' },
          ],
        },
      ],
    },
  ];
  let out: string;
  try {
    ({ stdout: out } = await promisify(execFile)(
      process.execPath,
      ['-e', GENERATE, JSON.stringify([import.meta.resolve('selfsigned'), args])],
      {
        env: { PATH: process.env.PATH },
      },
    ));
  } catch (e) {
    const stderr = (e as { stderr?: string }).stderr?.trim();
    throw new Error(`could not make a self-signed certificate for /metrics: ${stderr || (e as Error).message}`);
  }
  const { key, cert } = JSON.parse(out) as { key: string; cert: string };
  return { key, cert, source: 'self-signed' };
}

/**
 * Reads `tls.crt` and `tls.key` from `dir`; throws, naming the file and the setting, when one is
 * missing, not PEM, or the key does not belong to the certificate.
 */
export function readCertificate(dir: string, setting = 'APPKIND_METRICS_CERT_DIR'): ServingCertificate {
  const read = (file: string) => {
    try {
      return readFileSync(join(dir, file), 'utf8');
    } catch (e) {
      throw new Error(`${setting}: cannot read ${join(dir, file)} (${(e as Error).message}); mount a kubernetes.io/tls Secret there`);
    }
  };
  const cert = read(CERT_FILE);
  const key = read(KEY_FILE);
  let x509: X509Certificate;
  try {
    x509 = new X509Certificate(cert);
  } catch (e) {
    throw new Error(`${setting}: ${join(dir, CERT_FILE)} is not a PEM certificate (${(e as Error).message})`);
  }
  let matches: boolean;
  try {
    matches = x509.checkPrivateKey(createPrivateKey(key));
  } catch (e) {
    throw new Error(`${setting}: ${join(dir, KEY_FILE)} is not a PEM private key (${(e as Error).message})`);
  }
  if (!matches) throw new Error(`${setting}: ${join(dir, KEY_FILE)} is not the key of ${join(dir, CERT_FILE)}`);
  return { key, cert, source: dir };
}

/**
 * Calls `changed` with the folder's certificate whenever its files change (a Secret's mount is
 * replaced as a whole by the kubelet), checking every `intervalMs`; a change that does not read
 * as a valid pair is passed to `invalid` and the certificate before it stays in use. Returns stop.
 */
export function watchCertificate(
  dir: string,
  current: { readonly key: string; readonly cert: string },
  changed: (c: ServingCertificate) => void,
  invalid: (e: Error) => void,
  intervalMs = 10_000,
): () => void {
  let served = current;
  let lastError = '';
  const timer = setInterval(() => {
    let next: ServingCertificate;
    try {
      next = readCertificate(dir);
    } catch (e) {
      if ((e as Error).message !== lastError) invalid(e as Error);
      lastError = (e as Error).message;
      return;
    }
    lastError = '';
    if (next.cert === served.cert && next.key === served.key) return;
    served = next;
    changed(next);
  }, intervalMs);
  timer.unref();
  return () => clearInterval(timer);
}
