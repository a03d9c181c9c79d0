#!/usr/bin/env node
/* The `nestjs-exactly-once` executable (package.json `bin`). */
import 'reflect-metadata';
import { runCli } from './cli';

void runCli(process.argv.slice(2)).then((code) => {
  process.exitCode = code;
});
