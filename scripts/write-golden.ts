// Writes test/golden/render.yaml, what render() gives for every kind and CR of examples/ and the
// walkthrough's sample (test/golden/rendering.ts). Run with `npm run golden` after a change of the
// rendering, in the same commit, with a CHANGELOG line naming the apps it rolls (the file's header
// lists each app's pod template fingerprint); test/unit/golden.test.ts fails until then.
import { writeFileSync } from 'node:fs';
import { GOLDEN_FILE, goldenText, renderCases } from '../test/golden/rendering.js';

const objects = renderCases();
writeFileSync(GOLDEN_FILE, goldenText(objects));
console.log(`wrote ${GOLDEN_FILE}: ${objects.length} objects`);
