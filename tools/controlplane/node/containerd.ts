// containerd for the real node: a config whose root, state, socket, runc root and pod network
// namespaces all live in the run's folder, the CRI settings this machine needs (no CAP_SYS_RESOURCE:
// restrict_oom_score_adj; no registry: a pinned local sandbox image; cgroup v1: cgroupfs) and Debian's runc.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

export interface ContainerdFiles {
  /** The run's node folder. */
  dir: string;
  /** CNI plugin binaries (symlinks to the resolved ones) and the conflist folder. */
  cniBinDir: string;
  cniConfDir: string;
  runc: string;
  sandboxImage: string;
  /** 'overlayfs', or 'native' where the kernel has no overlay filesystem. */
  snapshotter: string;
}

export const containerdSocket = (dir: string): string => join(dir, 'containerd', 'containerd.sock');

const q = (value: string): string => JSON.stringify(value); // TOML basic strings share JSON's escapes

export function containerdConfig(f: ContainerdFiles): string {
  const root = join(f.dir, 'containerd');
  return `version = 3
root = ${q(join(root, 'root'))}
state = ${q(join(root, 'state'))}
# No drop-ins from /etc/containerd/conf.d; NRI would make /run/nri, the opt plugin /opt/containerd.
imports = []
disabled_plugins = ["io.containerd.nri.v1.nri", "io.containerd.internal.v1.opt", "io.containerd.internal.v1.tracing", "io.containerd.tracing.processor.v1.otlp"]

[grpc]
  address = ${q(containerdSocket(f.dir))}

[ttrpc]
  address = ${q(`${containerdSocket(f.dir)}.ttrpc`)}

[debug]
  address = ""

[metrics]
  address = ""

[plugins.'io.containerd.cri.v1.images']
  snapshotter = ${q(f.snapshotter)}
  [plugins.'io.containerd.cri.v1.images'.pinned_images]
    sandbox = ${q(f.sandboxImage)}

[plugins.'io.containerd.cri.v1.runtime']
  # Root here lacks CAP_SYS_RESOURCE: a negative oom_score_adj fails the sandbox (DESIGN.md).
  restrict_oom_score_adj = true
  # /var/run/netns would be outside the run's folder.
  netns_mounts_under_state_dir = true
  cdi_spec_dirs = []
  [plugins.'io.containerd.cri.v1.runtime'.containerd]
    default_runtime_name = "runc"
    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      snapshotter = ${q(f.snapshotter)}
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
        BinaryName = ${q(f.runc)}
        Root = ${q(join(f.dir, 'runc'))}
        SystemdCgroup = false
  [plugins.'io.containerd.cri.v1.runtime'.cni]
    bin_dirs = [${q(f.cniBinDir)}]
    conf_dir = ${q(f.cniConfDir)}
    max_conf_num = 1

[plugins.'io.containerd.grpc.v1.cri']
  disable_tcp_service = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
`;
}

export function writeContainerdConfig(f: ContainerdFiles): string {
  const path = join(f.dir, 'containerd.toml');
  writeFileSync(path, containerdConfig(f));
  return path;
}

export function containerdArgs(configPath: string): string[] {
  return ['--config', configPath, '--log-level', 'warn'];
}
