#!/usr/bin/env node
// Runs the compiled CLI (built by `npm install` through the prepare script).
import "../dist/cli.js";
