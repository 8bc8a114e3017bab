// The kinds one operator serves: the kinds file's and the AppKinds', merged; the file wins a Kind or
// CRD both claim.
import { describe, expect, test } from '@jest/globals';
import type { AppKind } from 'cdk8s-appkind';
import { KindSources } from '../../operator/controller/kind-sources.js';
import type { KindChanges } from '../../operator/controller/manager.js';
import { SAMPLE_KIND } from 'appkind-operator/kinds';

const flask: AppKind = { ...SAMPLE_KIND, kind: 'Flask', plural: 'flasks', appName: 'flask' };

function sources(file: AppKind[]) {
  const served: string[][] = [];
  const sink = {
    setKinds: (kinds: AppKind[]): KindChanges => {
      served.push(kinds.map((k) => k.kind));
      return { added: [], removed: [], changed: [] };
    },
  };
  return { served, s: new KindSources(sink, file) };
}

describe('KindSources', () => {
  test('serves the file\'s kinds and each AppKind\'s; removing an AppKind serves the rest', () => {
    const { served, s } = sources([SAMPLE_KIND]);
    s.setAppKind('flasks.swallowlab.com', flask);
    expect(served.at(-1)).toEqual(['EchoFlask', 'Flask']);
    expect(s.appKind('flasks.swallowlab.com')).toEqual(flask);
    expect(s.removeAppKind('flasks.swallowlab.com')).toBeDefined();
    expect(served.at(-1)).toEqual(['EchoFlask']);
    expect(s.removeAppKind('flasks.swallowlab.com')).toBeUndefined();
  });

  test('a kinds file that takes an AppKind\'s Kind wins: the AppKind\'s kind is no longer served', () => {
    const { served, s } = sources([SAMPLE_KIND]);
    s.setAppKind('flasks.swallowlab.com', flask);
    s.setFileKinds([SAMPLE_KIND, { ...flask, group: 'other.example.com' }]);
    expect(served.at(-1)).toEqual(['EchoFlask', 'Flask']);
    expect(s.appKind('flasks.swallowlab.com')).toBeUndefined();
    s.setFileKinds([SAMPLE_KIND]);
    expect(s.appKind('flasks.swallowlab.com')).toEqual(flask);
  });
});
