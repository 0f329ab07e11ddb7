// The browser tests' Chromium: headless Debian Chromium driven by
// playwright-core, with a throwaway profile, that lets a page reach only the
// Worker's origin.
import { chromium } from "playwright-core";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

// launchOnOrigin starts Chromium (executablePath) with a new profile
// (prefix names its temp folder). Every request is pushed to requests; one
// off origin (data: URLs too, unless allowData) is refused and reported in
// problems. It answers the context, its page and close(), which closes the
// browser and deletes the profile.
export async function launchOnOrigin({ executablePath, origin, timeout, viewport, prefix, problems, requests = [], allowData = false }) {
  const userDataDir = mkdtempSync(join(tmpdir(), prefix + "-chromium-"));
  const close = async (context) => {
    if (context) await context.close().catch(() => {});
    rmSync(userDataDir, { recursive: true, force: true });
  };
  let context;
  try {
    context = await chromium.launchPersistentContext(userDataDir, {
      executablePath,
      headless: true,
      args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
        "--disable-component-update", "--disable-sync"],
      viewport,
      timeout: 60000,
    });
    context.setDefaultTimeout(timeout);
    context.setDefaultNavigationTimeout(timeout);
    await context.route("**/*", (route) => {
      const u = route.request().url();
      requests.push(u);
      if (u.startsWith(origin + "/") || (allowData && u.startsWith("data:"))) return route.continue();
      problems.push("request off the Worker's origin: " + u);
      return route.abort();
    });
    const page = context.pages()[0] || (await context.newPage());
    return { context, page, close: () => close(context) };
  } catch (e) {
    await close(context);
    throw e;
  }
}
