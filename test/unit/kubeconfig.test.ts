import { describe, expect, it } from '@jest/globals';
import { KubeConfig } from '@kubernetes/client-node';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import type { RequestOptions } from 'node:https';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { inClusterConfig, KubeAccess, loadKubeAccess, SimpleKubeConfig, simpleKubeConfigFromFile } from '../../operator/runtime/kubeconfig.js';

const b64 = (s: string) => Buffer.from(s).toString('base64');

function kubeconfig(dir: string, cluster: Record<string, unknown>, user: Record<string, unknown>, name = 'config'): string {
  const file = join(dir, name);
  writeFileSync(
    file,
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'Config',
      'current-context': 'ctx',
      contexts: [
        { name: 'other', context: { cluster: 'other', user: 'other' } },
        { name: 'ctx', context: { cluster: 'c', user: 'u', namespace: 'ns' } },
      ],
      clusters: [
        { name: 'other', cluster: { server: 'https://wrong.example' } },
        { name: 'c', cluster },
      ],
      users: [
        { name: 'other', user: { token: 'wrong' } },
        { name: 'u', user },
      ],
    }),
  );
  return file;
}

async function options(kc: KubeAccess): Promise<RequestOptions> {
  const opts: RequestOptions = {};
  await kc.applyToHTTPSOptions(opts);
  return opts;
}

/** What the REST client takes of the options: TLS material and auth. */
async function essentials(kc: KubeAccess) {
  const o = await options(kc);
  const headers = (o.headers ?? {}) as Record<string, string>;
  return {
    server: kc.getCurrentCluster()?.server,
    ca: o.ca?.toString(),
    cert: o.cert?.toString(),
    key: o.key?.toString(),
    rejectUnauthorized: o.rejectUnauthorized,
    servername: o.servername,
    authorization: headers.Authorization,
    auth: o.auth ?? undefined,
  };
}

function clientNode(file: string): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromFile(file);
  return kc;
}

describe('kubeconfig without client-node', () => {
  const dir = mkdtempSync(join(tmpdir(), 'appkind-kubeconfig-'));

  it('reads a token, CA data and TLS settings of the current context exactly as client-node does', async () => {
    const file = kubeconfig(
      dir,
      { server: 'https://127.0.0.1:6443/', 'certificate-authority-data': b64('CA'), 'tls-server-name': 'kubernetes', 'insecure-skip-tls-verify': true },
      { token: 'secret' },
    );
    const simple = simpleKubeConfigFromFile(file)!;
    expect(simple).toBeInstanceOf(SimpleKubeConfig);
    expect(await essentials(simple)).toEqual({
      server: 'https://127.0.0.1:6443',
      ca: 'CA',
      cert: undefined,
      key: undefined,
      rejectUnauthorized: false,
      servername: 'kubernetes',
      authorization: 'Bearer secret',
      auth: undefined,
    });
    expect(await essentials(simple)).toEqual(await essentials(clientNode(file)));
  });

  it('reads client certificate files relative to the kubeconfig, and basic auth, as client-node does', async () => {
    const sub = join(dir, 'certs');
    mkdirSync(sub, { recursive: true });
    writeFileSync(join(sub, 'ca.crt'), 'CA FILE');
    writeFileSync(join(sub, 'client.crt'), 'CERT');
    writeFileSync(join(sub, 'client.key'), 'KEY');
    const file = kubeconfig(
      sub,
      { server: 'https://10.0.0.1', 'certificate-authority': 'ca.crt' },
      { 'client-certificate': 'client.crt', 'client-key': join(sub, 'client.key'), username: 'admin', password: 'pw' },
    );
    const simple = simpleKubeConfigFromFile(file)!;
    expect(await essentials(simple)).toMatchObject({ ca: 'CA FILE', cert: 'CERT', key: 'KEY', auth: 'admin:pw' });
    expect(await essentials(simple)).toEqual(await essentials(clientNode(file)));
  });

  it('reads a tokenFile again at every credential check (a rotated token)', async () => {
    const token = join(dir, 'token');
    writeFileSync(token, 'first\n');
    const simple = simpleKubeConfigFromFile(kubeconfig(dir, { server: 'https://h' }, { tokenFile: 'token' }))!;
    expect((await essentials(simple)).authorization).toBe('Bearer first');
    writeFileSync(token, 'second');
    expect((await essentials(simple)).authorization).toBe('Bearer second');
  });

  it('leaves exec and auth-provider plugins, impersonation and proxies to client-node', async () => {
    const exec = kubeconfig(dir, { server: 'https://h' }, { exec: { apiVersion: 'client.authentication.k8s.io/v1', command: 'true' } }, 'exec');
    expect(simpleKubeConfigFromFile(exec)).toBeUndefined();
    expect(simpleKubeConfigFromFile(kubeconfig(dir, { server: 'https://h' }, { 'auth-provider': { name: 'oidc' } }, 'oidc'))).toBeUndefined();
    expect(simpleKubeConfigFromFile(kubeconfig(dir, { server: 'https://h' }, { token: 't', as: 'someone' }, 'as'))).toBeUndefined();
    expect(simpleKubeConfigFromFile(kubeconfig(dir, { server: 'https://h', 'proxy-url': 'http://proxy:3128' }, {}, 'proxy'))).toBeUndefined();
    const loaded = await loadKubeAccess({ KUBECONFIG: exec });
    expect(loaded).toBeInstanceOf(KubeConfig);
    expect(loaded.getCurrentCluster()?.server).toBe('https://h');
  });

  it('finds the kubeconfig where client-node does: KUBECONFIG, then ~/.kube/config', async () => {
    const file = kubeconfig(dir, { server: 'https://from-env' }, { token: 't' }, 'env');
    expect((await loadKubeAccess({ KUBECONFIG: file, HOME: dir })).getCurrentCluster()?.server).toBe('https://from-env');
    const home = join(dir, 'home');
    mkdirSync(join(home, '.kube'), { recursive: true });
    kubeconfig(join(home, '.kube'), { server: 'https://from-home' }, { token: 't' });
    const fromHome = await loadKubeAccess({ HOME: home });
    expect(fromHome).toBeInstanceOf(SimpleKubeConfig);
    expect(fromHome.getCurrentCluster()?.server).toBe('https://from-home');
    // Several files are merged by client-node.
    const second = join(dir, 'second');
    writeFileSync(second, JSON.stringify({ clusters: [{ name: 'c2', cluster: { server: 'https://second' } }], users: [{ name: 'u2', user: {} }] }));
    const merged = await loadKubeAccess({ KUBECONFIG: [file, second].join(delimiter) });
    expect(merged).toBeInstanceOf(KubeConfig);
    expect(merged.getCurrentCluster()?.server).toBe('https://from-env');
  });

  it('in a pod: the ServiceAccount token (read again at every check), its CA and the service address', async () => {
    const sa = join(dir, 'sa');
    mkdirSync(sa, { recursive: true });
    writeFileSync(join(sa, 'token'), 'pod-token');
    writeFileSync(join(sa, 'ca.crt'), 'POD CA');
    const kc = inClusterConfig({ KUBERNETES_SERVICE_HOST: 'fd00::1', KUBERNETES_SERVICE_PORT: '443' }, sa);
    expect(await essentials(kc)).toMatchObject({ server: 'https://[fd00::1]:443', ca: 'POD CA', authorization: 'Bearer pod-token' });
    writeFileSync(join(sa, 'token'), 'rotated');
    expect((await essentials(kc)).authorization).toBe('Bearer rotated');
    expect(inClusterConfig({ KUBERNETES_SERVICE_HOST: '10.0.0.1', KUBERNETES_SERVICE_PORT: '8080' }, sa).getCurrentCluster().server).toBe(
      'http://10.0.0.1:8080',
    );
  });
});
