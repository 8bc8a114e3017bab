// Writes schema/appkinds.schema.json, the JSON Schema of the kind configuration file, from
// operator/kinds/schema.ts (which the operator validates with). Run with `npm run schema` after
// changing that file; test/unit/config-schema.test.ts fails when the checked-in file is stale.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { configSchemaJson } from 'appkind-operator/kinds';

const file = join(import.meta.dirname, '..', 'schema', 'appkinds.schema.json');
writeFileSync(file, configSchemaJson());
console.log(`wrote ${file}`);
