// Images on the real node without a registry (as `kind load` does): the sandbox (pause) image made from
// the pause binary as an OCI archive, and local images exported from podman/buildah storage, both
// imported into containerd's `k8s.io` namespace with ctr under their normalized names.
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';

const exec = promisify(execFile);
const sha256 = (data: Buffer | string): string => createHash('sha256').update(data).digest('hex');

export interface OciImage {
  /** Full image name stored with the image, e.g. `localhost/appkind-pause:<key>`. */
  name: string;
  /** Files at the image's root: name in the image -> file on this machine (made executable). */
  files: Record<string, string>;
  entrypoint: string[];
  user?: string;
  env?: string[];
  exposedPorts?: number[];
}

const goArch = (): string => ({ x64: 'amd64', arm64: 'arm64' })[process.arch as 'x64' | 'arm64'] ?? process.arch;

/**
 * Writes a single-layer OCI image archive (oci-layout, index.json, blobs) with the system's tar; returns
 * its path. Deterministic: the same files give the same digests.
 */
export async function writeOciArchive(image: OciImage, archive: string): Promise<string> {
  const work = mkdtempSync(`${archive}.work-`);
  try {
    const rootfs = join(work, 'rootfs');
    mkdirSync(rootfs);
    for (const [name, source] of Object.entries(image.files)) copyFileSync(source, join(rootfs, name));
    const tarFlags = ['--owner=0', '--group=0', '--numeric-owner', '--mtime=@0', '--sort=name', '--mode=a+rx,u+w'];
    await exec('tar', [...tarFlags, '-cf', join(work, 'layer.tar'), '-C', rootfs, ...Object.keys(image.files)]);
    const layer = readFileSync(join(work, 'layer.tar'));
    const blobs = join(work, 'oci', 'blobs', 'sha256');
    mkdirSync(blobs, { recursive: true });
    const blob = (data: Buffer | string): { digest: string; size: number } => {
      const hex = sha256(data);
      writeFileSync(join(blobs, hex), data);
      return { digest: `sha256:${hex}`, size: Buffer.byteLength(data) };
    };
    const layerBlob = blob(layer);
    const config = JSON.stringify({
      architecture: goArch(),
      os: 'linux',
      config: {
        Entrypoint: image.entrypoint,
        ...(image.user ? { User: image.user } : {}),
        ...(image.env ? { Env: image.env } : {}),
        ...(image.exposedPorts ? { ExposedPorts: Object.fromEntries(image.exposedPorts.map((p) => [`${p}/tcp`, {}])) } : {}),
      },
      rootfs: { type: 'layers', diff_ids: [layerBlob.digest] },
    });
    const configBlob = blob(config);
    const manifest = JSON.stringify({
      schemaVersion: 2,
      mediaType: 'application/vnd.oci.image.manifest.v1+json',
      config: { mediaType: 'application/vnd.oci.image.config.v1+json', ...configBlob },
      layers: [{ mediaType: 'application/vnd.oci.image.layer.v1.tar', ...layerBlob }],
    });
    const manifestBlob = blob(manifest);
    const tag = image.name.slice(image.name.lastIndexOf(':') + 1);
    const index = {
      schemaVersion: 2,
      mediaType: 'application/vnd.oci.image.index.v1+json',
      manifests: [
        {
          mediaType: 'application/vnd.oci.image.manifest.v1+json',
          ...manifestBlob,
          annotations: { 'io.containerd.image.name': image.name, 'org.opencontainers.image.ref.name': tag },
        },
      ],
    };
    writeFileSync(join(work, 'oci', 'index.json'), JSON.stringify(index));
    writeFileSync(join(work, 'oci', 'oci-layout'), JSON.stringify({ imageLayoutVersion: '1.0.0' }));
    await exec('tar', [...tarFlags.slice(0, 5), '-cf', archive, '-C', join(work, 'oci'), 'oci-layout', 'index.json', 'blobs']);
    return archive;
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

/** The sandbox image's name: keyed by the pause binary, so a rebuilt binary is a new image. */
export function pauseImageName(pauseBinary: string): string {
  return `localhost/appkind/pause:${sha256(readFileSync(pauseBinary)).slice(0, 12)}`;
}

export function writePauseImage(pauseBinary: string, archive: string): Promise<string> {
  return writeOciArchive({ name: pauseImageName(pauseBinary), files: { pause: pauseBinary }, entrypoint: ['/pause'], user: '65535:65535' }, archive);
}

/** `takeyan/flask:0.0.3` -> `docker.io/takeyan/flask:0.0.3`, as the kubelet and containerd name it. */
export function normalizeImageName(ref: string): string {
  const slash = ref.indexOf('/');
  const first = slash < 0 ? '' : ref.slice(0, slash);
  const hasDomain = slash >= 0 && (first.includes('.') || first.includes(':') || first === 'localhost');
  let name = hasDomain ? ref : `docker.io/${slash < 0 ? `library/${ref}` : ref}`;
  const lastPart = name.slice(name.lastIndexOf('/') + 1);
  if (!lastPart.includes(':') && !lastPart.includes('@')) name += ':latest';
  return name;
}

export class Ctr {
  constructor(
    private readonly ctr: string,
    private readonly socket: string,
  ) {}

  private run(args: string[]): Promise<{ stdout: string }> {
    return exec(this.ctr, ['--address', this.socket, '--namespace', 'k8s.io', ...args], { maxBuffer: 16 << 20 });
  }

  /** Imports an OCI or docker archive (unpacked for the CRI's snapshotter); returns the names it holds. */
  async importArchive(archive: string, snapshotter: string): Promise<string[]> {
    const before = new Set(await this.images());
    const { stdout } = await this.run(['images', 'import', '--local', '--snapshotter', snapshotter, archive]);
    const after = await this.images();
    const named = after.filter((name) => !before.has(name) || stdout.includes(name));
    return named.length ? named : after.filter((name) => stdout.includes(name));
  }

  async tag(source: string, target: string): Promise<void> {
    await this.run(['images', 'tag', '--force', '--local', source, target]);
  }

  async images(): Promise<string[]> {
    const { stdout } = await this.run(['images', 'list', '--quiet']);
    return stdout.split('\n').map((line) => line.trim()).filter(Boolean);
  }

  /** The host pid of a running container's main process (`ctr tasks ls`: TASK PID STATUS). */
  async taskPid(containerId: string): Promise<number | undefined> {
    const { stdout } = await this.run(['tasks', 'ls']);
    const row = stdout.split('\n').map((line) => line.trim().split(/\s+/)).find(([task]) => task === containerId);
    return row && row[2] === 'RUNNING' ? Number(row[1]) : undefined;
  }
}

/** Saves a podman/buildah image (by name or id) as a docker archive, which keeps its tag. */
export async function saveFromPodman(ref: string, archive: string): Promise<void> {
  try {
    await exec('podman', ['save', '--format', 'docker-archive', '--output', archive, ref], { maxBuffer: 16 << 20 });
  } catch (err) {
    const detail = err instanceof Error && 'stderr' in err ? String((err as { stderr: unknown }).stderr).trim() : String(err);
    throw new Error(`controlplane: cannot export image ${ref} from podman's storage (${detail}); build or pull it first (podman images lists what is there)`);
  }
}
