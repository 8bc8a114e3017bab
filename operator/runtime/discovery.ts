// Where the API server serves a kind: URL paths of collections and objects, and the resource names
// found by discovery, asked once per group version.
import { ApiError } from './api-failure.js';
import { sleep } from './sleep.js';

/** `/api/v1` or `/apis/<group>/<version>`: where a group version's resources are served. */
export function groupVersionPath(apiVersion: string): string {
  return apiVersion.includes('/') ? `/apis/${apiVersion}` : `/api/${apiVersion}`;
}

/** URL path of a collection (in one namespace, or all) or, with a name, of one object. */
export function resourcePath(r: { apiVersion: string; plural: string; namespace?: string; name?: string }): string {
  const ns = r.namespace ? `/namespaces/${encodeURIComponent(r.namespace)}` : '';
  return `${groupVersionPath(r.apiVersion)}${ns}/${r.plural}${r.name ? `/${encodeURIComponent(r.name)}` : ''}`;
}

interface Resource {
  readonly name: string;
  readonly kind: string;
  readonly namespaced: boolean;
}

/** The resources of each group version, read once with `get` (a GET on the API server) and kept. */
export class Discovery {
  private readonly found = new Map<string, Promise<Resource[]>>();

  constructor(private readonly get: <T>(path: string) => Promise<T>) {}

  /** URL path of a collection or, with a name, of one object; resource names come from discovery. */
  async path(apiVersion: string, kind: string, namespace?: string, name?: string): Promise<string> {
    let resource = (await this.resources(apiVersion)).find((r) => r.kind === kind);
    if (!resource) {
      // A CRD added to a group version discovered before it (an AppKind's kind in a group the kinds
      // file serves too): read the group version again once.
      this.found.delete(apiVersion);
      resource = (await this.resources(apiVersion)).find((r) => r.kind === kind);
    }
    if (!resource)
      throw new ApiError(404, 'NotFound', `the server does not serve ${kind} in ${apiVersion}; is its CRD installed?`, 'GET', apiVersion);
    return resourcePath({ apiVersion, plural: resource.name, namespace: resource.namespaced ? namespace : undefined, name });
  }

  private resources(apiVersion: string): Promise<Resource[]> {
    let found = this.found.get(apiVersion);
    if (!found) {
      found = this.discover(groupVersionPath(apiVersion));
      found.catch(() => this.found.delete(apiVersion));
      this.found.set(apiVersion, found);
    }
    return found;
  }

  /** A group version's resources; a CRD established a moment ago may need a few tries to appear. */
  private async discover(base: string): Promise<Resource[]> {
    for (let attempt = 1; ; attempt++) {
      try {
        const list = await this.get<{ resources: Resource[] }>(base);
        return list.resources.filter((x) => !x.name.includes('/'));
      } catch (e) {
        if (!(e instanceof ApiError) || e.code !== 404 || attempt >= 10) throw e;
        await sleep(300);
      }
    }
  }
}
