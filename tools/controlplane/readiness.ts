// Polling helpers used to decide when a component is ready. A component that exits while we wait
// fails the wait at once, naming its log file.
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { Component } from './component.js';

export interface HttpResult {
  status: number;
  body: string;
}

export interface GetOptions {
  /** PEM CA bundle for https URLs. */
  ca?: string;
  token?: string;
  timeoutMs?: number;
}

export function httpGet(url: string, opts: GetOptions = {}): Promise<HttpResult> {
  const request = url.startsWith('https:') ? httpsRequest : httpRequest;
  const headers: Record<string, string> = opts.token ? { Authorization: `Bearer ${opts.token}` } : {};
  return new Promise((resolve, reject) => {
    const req = request(url, { method: 'GET', headers, ca: opts.ca, timeout: opts.timeoutMs ?? 2000 }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('timeout', () => req.destroy(new Error(`timeout GET ${url}`)));
    req.on('error', reject);
    req.end();
  });
}

/** True when GET answers 200; false on any error (not up yet). */
export async function answers200(url: string, opts: GetOptions = {}): Promise<boolean> {
  try {
    return (await httpGet(url, opts)).status === 200;
  } catch {
    return false;
  }
}

export interface WaitOptions {
  timeoutMs?: number;
  intervalMs?: number;
  /** Fail fast (with its log tail) if these exit while waiting. */
  components?: Component[];
}

export function componentFailure(component: Component, what: string): Error {
  return new Error(
    `controlplane: ${component.name} ${what}; log: ${component.logPath}\n--- last lines ---\n${component.logTail()}`,
  );
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

export async function waitFor(what: string, check: () => Promise<boolean>, opts: WaitOptions = {}): Promise<void> {
  const deadline = Date.now() + (opts.timeoutMs ?? 60_000);
  const components = opts.components ?? [];
  let lastError: unknown;
  for (;;) {
    const dead = components.find((c) => c.exitInfo);
    if (dead) throw componentFailure(dead, `${dead.describeExit()} while waiting for ${what}`);
    try {
      if (await check()) return;
    } catch (err) {
      lastError = err; // not ready yet; remembered for the timeout message
    }
    if (Date.now() > deadline) {
      const cause = lastError instanceof Error ? ` (last error: ${lastError.message})` : '';
      const first = components[0];
      if (first) throw componentFailure(first, `not ready: timed out waiting for ${what}${cause}`);
      throw new Error(`controlplane: timed out waiting for ${what}${cause}`);
    }
    await sleep(opts.intervalMs ?? 200);
  }
}
