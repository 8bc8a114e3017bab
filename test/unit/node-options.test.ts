import { describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { OPERATOR_NODE_OPTIONS } from '../../bench/operator-setup.js';

const root = join(import.meta.dirname, '..', '..');

describe("the operator's Node options", () => {
  it('are the same in the image, npm run operator and the bench', () => {
    expect(readFileSync(join(root, 'Dockerfile'), 'utf8')).toContain(`ENV NODE_OPTIONS=${OPERATOR_NODE_OPTIONS}\n`);
    const scripts = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts;
    expect(scripts.operator).toMatch(new RegExp(`^exec node ${OPERATOR_NODE_OPTIONS} .* operator/main\\.ts$`));
  });
});
