// The image of the real-node tests of real-app kinds: test/integration/realapp built with Go into a
// single-layer OCI archive (no buildah, no registry), cached in ~/.cache/appkind/images/ by its sources.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { writeOciArchive } from '../../../tools/controlplane/node/images.js';

const SOURCES = ['go.mod', 'main.go'].map((f) => join(import.meta.dirname, f));

/** The image's name (keyed by its sources) and its archive, built on first use. */
export async function realAppImage(): Promise<{ name: string; archive: string }> {
  const key = createHash('sha256').update(SOURCES.map((f) => readFileSync(f)).join('\0')).digest('hex').slice(0, 12);
  const name = `localhost/appkind/realapp:${key}`;
  const cache = join(process.env.APPKIND_CACHE_DIR ?? join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'appkind'), 'images');
  const archive = join(cache, `realapp-${key}.tar`);
  if (existsSync(archive)) return { name, archive };
  mkdirSync(cache, { recursive: true });
  const work = mkdtempSync(join(cache, '.realapp-'));
  try {
    execFileSync('go', ['build', '-trimpath', '-ldflags=-s -w', '-o', join(work, 'realapp'), '.'], {
      cwd: import.meta.dirname,
      env: { ...process.env, GOTOOLCHAIN: 'local', CGO_ENABLED: '0' },
      stdio: ['ignore', 'inherit', 'inherit'],
    });
    // Runs as root, so a write under the read-only root fails for being read-only, not for permissions.
    await writeOciArchive({ name, files: { realapp: join(work, 'realapp') }, entrypoint: ['/realapp'], exposedPorts: [8080] }, join(work, 'image.tar'));
    renameSync(join(work, 'image.tar'), archive);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
  return { name, archive };
}
