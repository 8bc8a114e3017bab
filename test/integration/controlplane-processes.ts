// Finds live processes by command line or environment (Linux /proc), to prove a control plane left
// none behind: every component's command line contains its temp folder, and helpers such as the
// operator `npm start` runs carry it in KUBECONFIG.
import { readdirSync, readFileSync } from 'node:fs';

export interface ProcessInfo {
  pid: number;
  cmdline: string;
}

function procFile(pid: number, file: 'cmdline' | 'environ'): string {
  try {
    return readFileSync(`/proc/${pid}/${file}`, 'utf8').replace(/\0/g, ' ').trim();
  } catch {
    return ''; // exited while we looked, or not ours to read
  }
}

/** Processes whose command line or environment contains `text` (zombies have neither). */
export function processesMentioning(text: string): ProcessInfo[] {
  const found: ProcessInfo[] = [];
  for (const entry of readdirSync('/proc')) {
    const pid = Number(entry);
    if (!Number.isInteger(pid) || pid === process.pid) continue;
    const cmdline = procFile(pid, 'cmdline');
    if (cmdline.includes(text) || procFile(pid, 'environ').includes(text)) found.push({ pid, cmdline });
  }
  return found;
}
