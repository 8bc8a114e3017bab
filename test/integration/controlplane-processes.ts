// Finds live processes by their command line (Linux /proc), to prove a control plane left none behind.
// Every component's command line contains its control plane's temp folder.
import { readdirSync, readFileSync } from 'node:fs';

export interface ProcessInfo {
  pid: number;
  cmdline: string;
}

function cmdlineOf(pid: number): string | undefined {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ').trim();
  } catch {
    return undefined; // exited while we looked
  }
}

/** Processes whose command line contains `text` (zombies have an empty one and are not counted). */
export function processesMentioning(text: string): ProcessInfo[] {
  const found: ProcessInfo[] = [];
  for (const entry of readdirSync('/proc')) {
    const pid = Number(entry);
    if (!Number.isInteger(pid) || pid === process.pid) continue;
    const cmdline = cmdlineOf(pid);
    if (cmdline?.includes(text)) found.push({ pid, cmdline });
  }
  return found;
}
