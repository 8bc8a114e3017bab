import { afterEach, beforeEach, describe, expect, test } from '@jest/globals';
import type { AppKind } from 'cdk8s-appkind';
import { mkdirSync, mkdtempSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError } from 'appkind-operator/kinds';
import { KindsFile } from '../../operator/controller/kinds-file.js';

const kind = (name: string) => `  - {group: example.com, version: v1, kind: ${name}, image: nginx, port: 80}\n`;

describe('KindsFile: the kinds file read again when it changes', () => {
  let dir: string;
  let served: string[][];
  let refused: string[];
  let file: KindsFile;
  let version: number;

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'kinds-file-'));
    served = [];
    refused = [];
    version = 0;
  });
  afterEach(() => {
    file?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  /** The file as the kubelet writes a mounted ConfigMap: kinds.yaml -> ..data/kinds.yaml, ..data a symlink swapped by rename. */
  function writeAsKubelet(text: string): void {
    const target = join(dir, `..v${++version}`);
    mkdirSync(target);
    writeFileSync(join(target, 'kinds.yaml'), text);
    symlinkSync(`..v${version}`, join(dir, '..data_tmp'));
    renameSync(join(dir, '..data_tmp'), join(dir, '..data'));
    if (version === 1) symlinkSync('..data/kinds.yaml', join(dir, 'kinds.yaml'));
  }

  function watch(): KindsFile {
    file = new KindsFile(join(dir, 'kinds.yaml'), {
      valid: (kinds: AppKind[]) => served.push(kinds.map((k) => k.kind)),
      invalid: (e: ConfigError) => refused.push(e.message),
    });
    return file;
  }

  test('an unchanged file is not handled again; a valid edit is handed over; a bad edit is refused with its reason and the next good one served', () => {
    writeAsKubelet(`kinds:\n${kind('Alpha')}`);
    const f = watch();
    f.check();
    expect(served).toEqual([]);

    writeAsKubelet(`kinds:\n${kind('Alpha')}${kind('Beta')}`);
    f.check();
    f.check();
    expect(served).toEqual([['Alpha', 'Beta']]);

    writeAsKubelet(`kinds:\n${kind('Alpha')}  - {group: example.com, version: v1, kind: Gamma, image: nginx, port: 99999}\n`);
    f.check();
    expect(served).toHaveLength(1);
    expect(refused).toEqual([expect.stringMatching(/kinds\[1\]: port is 99999, not an integer from 1 to 65535/)]);

    writeAsKubelet(`kinds:\n${kind('Alpha')}${kind('Gamma')}`);
    f.check();
    expect(served).toEqual([['Alpha', 'Beta'], ['Alpha', 'Gamma']]);
  });

  test('a change is noticed without a call to check() (the folder watch, or the poll behind it)', async () => {
    writeAsKubelet(`kinds:\n${kind('Alpha')}`);
    watch().start();
    writeAsKubelet(`kinds:\n${kind('Beta')}`);
    for (let i = 0; i < 100 && served.length === 0; i++) await new Promise((r) => setTimeout(r, 100));
    expect(served).toEqual([['Beta']]);
  });
});
