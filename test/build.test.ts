// `npm start` builds only what changed (bin/build.js --if-stale, its
// prestart): on an installed checkout whose dist/ is current it builds
// nothing, so the server starts without a 20-second tsc and vite build.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { test } from "node:test";
import { ROOT } from "./browser.ts";

const BUILD = path.join(ROOT, "bin", "build.js");
const OUTPUTS = ["dist/cli.js", "dist/web/index.html", "dist/.build-stamp"].map((f) => path.join(ROOT, f));

test("npm start's prestart leaves a current build alone, and the build notes its inputs", { timeout: 300_000 }, () => {
  const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, "package.json"), "utf8")) as { scripts: Record<string, string> };
  assert.equal(pkg.scripts.prestart, "node bin/build.js --if-stale");
  // Current (npm test has just built; run alone after an edit, this builds once).
  execFileSync(process.execPath, [BUILD, "--if-stale"], { cwd: ROOT, stdio: "pipe" });
  const before = OUTPUTS.map((f) => fs.statSync(f).mtimeMs);
  execFileSync(process.execPath, [BUILD, "--if-stale"], { cwd: ROOT, stdio: "pipe" });
  assert.deepEqual(OUTPUTS.map((f) => fs.statSync(f).mtimeMs), before, "a current build was built again");
});
