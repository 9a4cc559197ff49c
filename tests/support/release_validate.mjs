// `openclaw config validate --json` for many files in one Node process (a CLI start is a second each):
// the release's own reader, migrations and checks, as its CLI calls them (dist/config-cli-*.mjs).
// Usage: node release_validate.mjs <openclaw dist folder> <file>...; one JSON line a file.
import { readdirSync } from "node:fs";

const [dist, ...files] = process.argv.slice(2);
const { createConfigIO } = await import(`${dist}/config/config.js`);
const finishers = readdirSync(dist).filter((name) => /^config-cli-validation-.*\.mjs$/.test(name));
let finish;
for (const name of finishers) {
  const module = await import(`${dist}/${name}`);
  finish ??= module.finishConfigValidationForCli;
}
const notices = (list) => (list ?? []).map(({ path, message }) => ({ path, message }));
for (const file of files) {
  const io = createConfigIO({ env: { ...process.env, OPENCLAW_CONFIG_PATH: file }, observe: false });
  const snapshot = await finish(await io.readConfigFileSnapshotWithPluginMetadata({ prepareValidation: "strict" }));
  const line = { file, valid: snapshot.valid, issues: notices(snapshot.issues), warnings: notices(snapshot.warnings) };
  process.stdout.write(`${JSON.stringify(line)}\n`);
}
