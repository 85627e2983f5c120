// Takes the writer lock of the project in argv[2] (its store from the environment) and holds it until killed.
import { openProject } from '../src/project/local/index.ts';

const project = await openProject({ root: process.argv[2]!, create: true, userConfig: false });
await project.store.acquireWriter({ waitMs: 0 });
process.stdout.write('locked\n');
setInterval(() => {}, 60_000);
