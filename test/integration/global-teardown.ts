// Stops the shared control plane started by global-setup.ts (same process, so globalThis is shared).
import type { ControlPlaneHolder } from './global-setup.js';

export default async function globalTeardown(): Promise<void> {
  const holder = globalThis as ControlPlaneHolder;
  await holder.__appkindControlPlane?.stop();
  holder.__appkindControlPlane = undefined;
}
