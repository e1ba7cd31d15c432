#!/usr/bin/env node
// Builds the server (tsc → dist/) and the web client (vite → dist/web/), then
// notes when it did. With --if-stale (npm start's prestart) it builds only
// when a source or build setting changed since that note, so starting an
// installed checkout does not pay for a build it already has.
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const STAMP = path.join(ROOT, "dist", ".build-stamp");
/** What the build reads: a change to any of these makes dist/ stale. */
const INPUTS = ["src", "web", "tsconfig.json", "tsconfig.build.json", "package.json", "package-lock.json"];

function newestMtime(target) {
  let stat;
  try {
    stat = fs.statSync(target);
  } catch {
    return 0;
  }
  if (!stat.isDirectory()) return stat.mtimeMs;
  let newest = stat.mtimeMs;
  for (const entry of fs.readdirSync(target)) newest = Math.max(newest, newestMtime(path.join(target, entry)));
  return newest;
}

function isStale() {
  let built;
  try {
    built = fs.statSync(STAMP).mtimeMs;
  } catch {
    return true;
  }
  if (!fs.existsSync(path.join(ROOT, "dist", "cli.js")) || !fs.existsSync(path.join(ROOT, "dist", "web", "index.html"))) return true;
  return INPUTS.some((input) => newestMtime(path.join(ROOT, input)) > built);
}

if (process.argv.includes("--if-stale") && !isStale()) process.exit(0);
const run = (script, args) => execFileSync(process.execPath, [path.join(ROOT, "node_modules", script), ...args], { cwd: ROOT, stdio: "inherit" });
const started = Date.now();
run("typescript/bin/tsc", ["-p", "tsconfig.build.json"]);
run("vite/bin/vite.js", ["build", "--config", "web/vite.config.ts", "--logLevel", "warn"]);
fs.writeFileSync(STAMP, `${new Date(started).toISOString()}\n`);
// The stamp's time is when the build began: a source saved during the build counts as newer.
fs.utimesSync(STAMP, started / 1000, started / 1000);
