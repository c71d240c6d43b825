// What the demo's Node servers (demo-server.mjs, mock-provider.mjs) share as commands.

import { realpathSync } from "node:fs";
import { pathToFileURL } from "node:url";

/** Whether the module at `moduleUrl` is the script Node was started with. */
export function isMainModule(moduleUrl) {
  if (!process.argv[1]) return false;
  try {
    return pathToFileURL(realpathSync(process.argv[1])).href === moduleUrl;
  } catch {
    return false;
  }
}

/** Closes `server` (anything with `close(): Promise`) and exits on Ctrl-C or SIGTERM. */
export function closeOnSignals(server) {
  const stop = () => {
    process.off("SIGINT", stop);
    process.off("SIGTERM", stop);
    server.close().then(() => process.exit(0));
    // Never linger more than a moment on shutdown.
    setTimeout(() => process.exit(0), 1000).unref();
  };
  process.on("SIGINT", stop);
  process.on("SIGTERM", stop);
}
