// Jest runs the TypeScript sources as ES modules (client-node is ESM only): ts-jest's ESM preset,
// with `node --experimental-vm-modules` set by the npm scripts.
const esm = {
  preset: 'ts-jest/presets/default-esm',
  testEnvironment: 'node',
  extensionsToTreatAsEsm: ['.ts'],
  moduleNameMapper: { '^(\\.{1,2}/.*)\\.js$': '$1' },
  transform: { '^.+\\.ts$': ['ts-jest', { useESM: true, tsconfig: 'tsconfig.json' }] },
};

/** @type {import('jest').Config} */
export default {
  // Per-project testTimeout is ignored by jest; integration tests wait on a real control plane.
  testTimeout: 180_000,
  projects: [
    { ...esm, displayName: 'unit', testMatch: ['<rootDir>/test/unit/**/*.test.ts'] },
    {
      ...esm,
      displayName: 'integration',
      testMatch: ['<rootDir>/test/integration/**/*.test.ts'],
      globalSetup: '<rootDir>/test/integration/global-setup.ts',
      globalTeardown: '<rootDir>/test/integration/global-teardown.ts',
      slowTestThreshold: 60,
    },
    // The packed library in freshly made projects (cdk8s init, ESM, CommonJS, Go, Python); run after
    // the others with --runInBand (npm test does), as each test installs and builds a whole project.
    { ...esm, displayName: 'consumers', testMatch: ['<rootDir>/test/consumers/**/*.test.ts'], slowTestThreshold: 300 },
  ],
};
