// The files the control plane is configured with: ServiceAccount signing keys, the static admin
// token, the audit policy and kubeconfigs. Everything lives in the control plane's temp folder.
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { appendFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'yaml';

export interface ServiceAccountKeys {
  privateKeyPath: string;
  publicKeyPath: string;
}

/** RSA key pair the API server signs ServiceAccount tokens with (and verifies them). */
export function writeServiceAccountKeys(dir: string): ServiceAccountKeys {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', {
    modulusLength: 2048,
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
    publicKeyEncoding: { type: 'spki', format: 'pem' },
  });
  const privateKeyPath = join(dir, 'sa.key');
  const publicKeyPath = join(dir, 'sa.pub');
  writeFileSync(privateKeyPath, privateKey, { mode: 0o600 });
  writeFileSync(publicKeyPath, publicKey);
  return { privateKeyPath, publicKeyPath };
}

export const ADMIN_USER = 'appkind-admin';

/**
 * A static token file with one system:masters user: the simplest admin identity that needs no
 * client-certificate CA. Returns the token.
 */
export function writeAdminTokenFile(path: string): string {
  const token = randomBytes(24).toString('hex');
  writeFileSync(path, `${token},${ADMIN_USER},${ADMIN_USER},"system:masters"\n`, { mode: 0o600 });
  return token;
}

/** Adds a user to the static token file (the real node's kubelet and kube-proxy); returns its token. */
export function addTokenUser(path: string, user: string, groups: readonly string[]): string {
  const token = randomBytes(24).toString('hex');
  appendFileSync(path, `${token},${user},${user}${groups.length ? `,"${groups.join(',')}"` : ''}\n`);
  return token;
}

/** Metadata for every request; RequestReceived is skipped so each request logs once when done. */
export function writeAuditPolicy(path: string): void {
  const policy = {
    apiVersion: 'audit.k8s.io/v1',
    kind: 'Policy',
    omitStages: ['RequestReceived'],
    rules: [{ level: 'Metadata' }],
  };
  writeFileSync(path, stringify(policy));
}

export interface KubeconfigSpec {
  server: string;
  caPem: string;
  user: string;
  token: string;
}

export function writeKubeconfig(path: string, spec: KubeconfigSpec): void {
  const config = {
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [
      {
        name: 'appkind',
        cluster: { server: spec.server, 'certificate-authority-data': Buffer.from(spec.caPem).toString('base64') },
      },
    ],
    users: [{ name: spec.user, user: { token: spec.token } }],
    contexts: [{ name: spec.user, context: { cluster: 'appkind', user: spec.user, namespace: 'default' } }],
    'current-context': spec.user,
  };
  writeFileSync(path, stringify(config), { mode: 0o600 });
}
