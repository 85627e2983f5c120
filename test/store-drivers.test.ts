import { after, before, describe } from 'node:test';
import { resolveConfig } from '../src/config/config.ts';
import { openStore } from '../src/store/open.ts';
import type { Store } from '../src/store/types.ts';
import { makeTree, removeTree } from './helpers.ts';
import { storeContract } from './store-contract.ts';
import { storeGuarantees } from './store-guarantees.ts';
import { startServer, type TestServer } from './store-servers.ts';

const trees: string[] = [];
after(() => trees.forEach(removeTree));

let n = 0;
/** A fresh, empty store of this driver: a new project folder and a new repository key in the shared server. */
async function fresh(url: string | undefined): Promise<Store> {
  const root = makeTree({});
  trees.push(root);
  const config = resolveConfig({
    root,
    userConfig: false,
    env: {},
    overrides: { store: { ...(url ? { url } : {}), repo: `repo-${++n}` } },
  });
  return openStore(config, root, { create: true });
}

describe('SQLite (the default): the guarantees through the seam', () => {
  storeGuarantees({ name: 'sqlite', url: () => undefined }, trees);
});

for (const kind of ['postgres', 'chroma'] as const) {
  describe(`${kind === 'postgres' ? 'PostgreSQL + pgvector' : 'Chroma (vectors) + SQLite'}`, () => {
    let server: TestServer;
    before(async () => {
      server = await startServer(kind);
    });
    after(async () => server?.dispose());
    describe('the store contract', () => storeContract(() => fresh(server.url)));
    describe('the guarantees through the seam', () =>
      storeGuarantees({ name: kind, url: () => server.url }, trees));
  });
}
