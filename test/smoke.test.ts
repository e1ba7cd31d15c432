import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { assertSuccess, startTestApp, type TestApp } from "./helpers.ts";

let t: TestApp;
before(async () => {
  t = await startTestApp();
});
after(() => t.close());

test("every role's user can fetch itself", async () => {
  for (const [name, user] of Object.entries(t.users)) {
    const body = assertSuccess(await t.api(user, "GET", "/users/me"));
    assert.equal(body.user_id, user.id, name);
    assert.equal(body.role, user.role, name);
  }
});
