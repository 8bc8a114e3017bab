import { describe, expect, test } from '@jest/globals';
import { ImagePolicy } from 'cdk8s-appkind';

describe('ImagePolicy', () => {
  test('with no patterns, only the kind image is allowed', () => {
    const policy = new ImagePolicy('takeyan/flask:0.0.3');
    expect(policy.patterns).toEqual(['takeyan/flask:0.0.3']);
    expect(policy.allows('takeyan/flask:0.0.3')).toBe(true);
    expect(policy.allows('takeyan/flask:0.0.4')).toBe(false);
    expect(policy.allows('nginx:1.27')).toBe(false);
    expect(policy.celRule()).toBe("self == 'takeyan/flask:0.0.3'");
    expect(policy.message()).toBe('spec.image is not allowed for this kind; allowed images: takeyan/flask:0.0.3');
  });

  test('a trailing * is a prefix: a registry, or a repository with any tag', () => {
    const policy = new ImagePolicy('takeyan/flask:0.0.3', ['registry.example.com/*', 'takeyan/flask:*', 'busybox:1.36']);
    expect(policy.allows('registry.example.com/team/app:2')).toBe(true);
    expect(policy.allows('takeyan/flask:0.0.9')).toBe(true);
    expect(policy.allows('busybox:1.36')).toBe(true);
    expect(policy.allows('busybox:1.37')).toBe(false);
    // A prefix is plain text: a look-alike registry host does not match "registry.example.com/".
    expect(policy.allows('registry.example.com.evil.io/app:1')).toBe(false);
    expect(policy.allows('takeyan/flask-evil:1')).toBe(false);
    expect(policy.celRule()).toBe(
      "self == 'takeyan/flask:0.0.3' || self.startsWith('registry.example.com/') || self.startsWith('takeyan/flask:') || self == 'busybox:1.36'",
    );
    expect(policy.message()).toContain('allowed images: takeyan/flask:0.0.3, registry.example.com/*, takeyan/flask:*, busybox:1.36');
  });

  test('* alone allows any image, and the rule is then left out', () => {
    const policy = new ImagePolicy('nginx:1.27', ['*']);
    expect(policy.allowsAny).toBe(true);
    expect(policy.allows('anything/at:all')).toBe(true);
    expect(policy.celRule()).toBe('true');
  });

  test.each([
    ['reg*istry/app', /"\*" before its end/],
    ['', /empty or contains white space/],
    ['a b', /empty or contains white space/],
    ["evil'||true", /characters an image reference cannot have/],
  ])('the pattern %j is refused', (pattern, message) => {
    expect(ImagePolicy.problemOf(pattern)).toMatch(message);
    expect(() => new ImagePolicy('nginx:1.27', [pattern])).toThrow(message);
  });
});
