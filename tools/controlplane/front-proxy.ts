// The aggregation layer's front-proxy credentials: a CA, and a client certificate signed by it that
// kube-apiserver presents when it proxies a request to an extension API server (metrics-server),
// which trusts the X-Remote-User headers of that request only because of this certificate.
import { execFileSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';

/** The client certificate's common name, the one `--requestheader-allowed-names` admits. */
export const FRONT_PROXY_CLIENT = 'front-proxy-client';

export interface FrontProxyFiles {
  caFile: string;
  certFile: string;
  keyFile: string;
}

/** Writes the CA and the client certificate (P-256, one day) with Debian's openssl into `dir`. */
export function writeFrontProxyCerts(dir: string): FrontProxyFiles {
  mkdirSync(dir, { recursive: true });
  const files = { caFile: join(dir, 'front-proxy-ca.crt'), certFile: join(dir, 'front-proxy-client.crt'), keyFile: join(dir, 'front-proxy-client.key') };
  const caKey = join(dir, 'front-proxy-ca.key');
  const key = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '1'];
  const openssl = (args: string[]): void => {
    try {
      execFileSync('openssl', args, { stdio: ['ignore', 'ignore', 'pipe'] });
    } catch (err) {
      throw new Error(`controlplane: openssl ${args[0]} for the front-proxy certificates failed (install Debian's openssl): ${(err as { stderr?: Buffer }).stderr?.toString().trim() ?? String(err)}`);
    }
  };
  openssl(['req', '-x509', ...key, '-subj', '/CN=appkind-front-proxy-ca', '-keyout', caKey, '-out', files.caFile]);
  openssl(['req', '-x509', ...key, '-subj', `/CN=${FRONT_PROXY_CLIENT}`, '-CA', files.caFile, '-CAkey', caKey,
    '-addext', 'extendedKeyUsage=clientAuth', '-addext', 'basicConstraints=critical,CA:FALSE', '-keyout', files.keyFile, '-out', files.certFile]);
  return files;
}
