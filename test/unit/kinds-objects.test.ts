import { describe, expect, it } from '@jest/globals';
import type { V1Deployment } from '@kubernetes/client-node';
import { SAMPLE_KIND } from 'appkind-operator/kinds';
import { bundleObjects, bundleProps, kindsObjects } from '../../tools/release/manifests.js';

const names = (kindGroups: string[]) => kindsObjects({ kinds: [SAMPLE_KIND], kindGroups }).map((o) => `${o.kind}/${o.metadata!.name}`);

describe("what a kinds edit installs (npm run kinds), with AppKinds' kind groups", () => {
  it('re-renders the child policies with the groups, and leaves out what the groups alone shape', () => {
    const withGroups = kindsObjects({ kinds: [SAMPLE_KIND], kindGroups: ['apps.example.com'] });
    const deployments = withGroups.find((o) => o.kind === 'ValidatingAdmissionPolicy' && o.metadata!.name === 'appkind-operator-deployments') as unknown as {
      spec: { validations: { expression: string }[] };
    };
    expect(deployments.spec.validations[0]!.expression).toContain("variables.ownerGroup in ['apps.example.com']");
    // The CRD rules and policies and the groups' roles stay as install.yaml made them.
    for (const name of ['appkind-operator-crds', 'appkind-operator-appkind-crds', 'apps.example.com-view', 'apps.example.com-edit']) {
      expect(names(['apps.example.com']).filter((n) => n.endsWith(`/${name}`))).toEqual([]);
    }
    // The AppKind children's policy names the kinds (their children are judged by their own rules): re-rendered with them.
    const children = ['ValidatingAdmissionPolicy', 'ValidatingAdmissionPolicyBinding'].map((k) => `${k}/appkind-operator-appkind-children`);
    expect(names(['apps.example.com']).filter((n) => !children.includes(n))).toEqual(names([]));
    expect(names(['apps.example.com'])).toEqual(expect.arrayContaining(children));
  });

  it('takes the groups from APPKIND_KIND_GROUPS, as npm run release does', () => {
    expect(bundleProps({ APPKIND_KIND_GROUPS: 'apps.example.com,team.example.org' }).kindGroups).toEqual(['apps.example.com', 'team.example.org']);
    expect(bundleProps({}).kindGroups).toEqual([]);
    expect(() => bundleProps({ APPKIND_KIND_GROUPS: 'apps.k8s.io' })).toThrow(/APPKIND_KIND_GROUPS: "apps.k8s.io" is a Kubernetes group/);
  });

  it("takes the AppKind selector from APPKIND_APPKIND_SELECTOR into the operator's env, as npm run release does", () => {
    const env = (props: ReturnType<typeof bundleProps>) =>
      (bundleObjects(props).find((o) => o.kind === 'Deployment') as V1Deployment).spec!.template.spec!.containers[0]!.env!;
    expect(env(bundleProps({ APPKIND_APPKIND_SELECTOR: ' team=payments ' }))).toContainEqual({ name: 'APPKIND_APPKIND_SELECTOR', value: 'team=payments' });
    expect(env(bundleProps({ APPKIND_APPKIND_SELECTOR: 'none' }))).toContainEqual({ name: 'APPKIND_APPKIND_SELECTOR', value: 'none' });
    expect(env(bundleProps({})).map((e) => e.name)).not.toContain('APPKIND_APPKIND_SELECTOR');
    expect(() => bundleProps({ APPKIND_APPKIND_SELECTOR: 'team=a,' })).toThrow(/^APPKIND_APPKIND_SELECTOR="team=a," is not a label selector: .*stray comma/);
  });
});
