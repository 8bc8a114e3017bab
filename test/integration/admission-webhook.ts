// A validating admission webhook for tests: an HTTPS server on loopback (a self-signed certificate the
// API server trusts through the webhook's caBundle). It denies every request it gets, with a message
// that differs at every call, as a webhook naming a request uid or a timestamp does; or it allows each
// one after a delay, which holds a write (and the reconcile making it) in flight for that long.
import { KubernetesObject } from '@kubernetes/client-node';
import { createServer, Server } from 'node:https';
import { AddressInfo } from 'node:net';
import { generate } from 'selfsigned';
import { RestClient } from '../../operator/runtime/rest.js';

/** What the API server sends a validating webhook (admission.k8s.io/v1 AdmissionReview), as far as read here. */
interface AdmissionReview {
  request?: { uid: string; operation: string; userInfo?: { username?: string } };
}

/** What the webhook answers: a denial, or an allow sent `allowAfterMs` after the request arrived. */
export type Verdict = { deny: true } | { allowAfterMs: number };

export class AdmissionWebhook {
  private constructor(
    /** Every call so far: when, and who made the request it judged. */
    readonly calls: { at: number; username?: string }[],
    private readonly server: Server,
    private readonly rest: RestClient,
    private readonly config: KubernetesObject,
  ) {}

  /**
   * Starts the server and registers it (a ValidatingWebhookConfiguration named `name`) for creates
   * and updates of `resource` (e.g. `apps/v1 deployments`) in `namespace` only.
   */
  static async start(
    rest: RestClient,
    name: string,
    namespace: string,
    resource: { group: string; version: string; plural: string },
    verdict: Verdict = { deny: true },
  ): Promise<AdmissionWebhook> {
    const pems = await generate([{ name: 'commonName', value: '127.0.0.1' }], {
      keyType: 'ec',
      algorithm: 'sha256',
      extensions: [
        { name: 'basicConstraints', cA: false },
        { name: 'extKeyUsage', serverAuth: true },
        { name: 'subjectAltName', altNames: [{ type: 7, ip: '127.0.0.1' }] },
      ],
    });
    const calls: { at: number; username?: string }[] = [];
    const server = createServer({ key: pems.private, cert: pems.cert }, (req, res) => {
      let body = '';
      req.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
      req.on('end', () => {
        const review = JSON.parse(body) as AdmissionReview;
        calls.push({ at: Date.now(), username: review.request?.userInfo?.username });
        const n = calls.length;
        const answer = (response: Record<string, unknown>) => {
          res.setHeader('Content-Type', 'application/json');
          res.end(JSON.stringify({ apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', response: { uid: review.request?.uid, ...response } }));
        };
        if ('allowAfterMs' in verdict) {
          setTimeout(() => answer({ allowed: true }), verdict.allowAfterMs);
          return;
        }
        answer({
          allowed: false,
          status: { code: 403, message: `denied by the test webhook (call ${n}, request ${review.request?.uid}, at ${new Date().toISOString()})` },
        });
      });
    });
    await new Promise<void>((resolve, reject) => server.once('error', reject).listen(0, '127.0.0.1', () => resolve()));
    const port = (server.address() as AddressInfo).port;
    const config: KubernetesObject & Record<string, unknown> = {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingWebhookConfiguration',
      metadata: { name },
      webhooks: [
        {
          name: 'verdict.test.appkind.io',
          clientConfig: { url: `https://127.0.0.1:${port}/validate`, caBundle: Buffer.from(pems.cert).toString('base64') },
          rules: [{ apiGroups: [resource.group], apiVersions: [resource.version], resources: [resource.plural], operations: ['CREATE', 'UPDATE'] }],
          namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': namespace } },
          failurePolicy: 'Fail',
          sideEffects: 'None',
          admissionReviewVersions: ['v1'],
          timeoutSeconds: 5,
        },
      ],
    };
    const webhook = new AdmissionWebhook(calls, server, rest, config);
    await rest.apply(config, 'test-webhook');
    return webhook;
  }

  /** Unregisters the webhook, then stops its server. */
  async stop(): Promise<void> {
    await this.rest.delete(this.config);
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
