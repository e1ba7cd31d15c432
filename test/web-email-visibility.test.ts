// Email addresses in the web client, in a real browser (defect 12): the
// Organization › Users table, the People page and the user card show the
// real address wherever the viewer may see it (delivery_email), not the
// fake user{id}@… one; a member's "Who can see my email address" in
// Settings › Profile changes what the owner, an administrator and another
// member see, live, from the realm_user events.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type { Page } from "playwright-core";
import { BrowserHarness, waitFor } from "./browser.ts";
import { assertSuccess, type TestUser } from "./helpers.ts";

const h = new BrowserHarness();
before(() => h.start());
after(() => h.close());

async function openPage(user: TestUser, hash: string): Promise<Page> {
  const page = await h.newPage();
  await h.logIn(page, user);
  await page.goto(`${h.t.url}/${hash}`);
  return page;
}

const fakeEmail = (id: number): string => `user${id}@${h.t.services.config.fakeEmailDomain}`;

/** The Email cell of `name`'s row in the Organization › Users table. */
function emailCell(page: Page, name: string) {
  return page.getByRole("table", { name: "Users" }).getByRole("row").filter({ has: page.getByRole("cell", { name, exact: true }) }).getByRole("cell").nth(1);
}

/** `name`'s row on the People page. */
function peopleRow(page: Page, name: string) {
  return page.getByRole("region", { name: "People" }).locator(`li[aria-label="${name}"]`);
}

async function cellIs(page: Page, name: string, text: string): Promise<void> {
  await waitFor(`${name}'s address in the users table is ${text}`, async () => (await emailCell(page, name).textContent()) === text);
}

describe("web client: email addresses and who may see them", () => {
  test("the owner sees the real addresses in the users table, not the hidden ones", async () => {
    const t = h.t;
    const olivia = await openPage(t.users.owner, "#organization/organization-profile");
    await olivia.getByRole("table", { name: "Users" }).waitFor();
    // Everyone's address is visible to administrators by default: the table has no fake one.
    for (const user of [t.users.admin, t.users.moderator, t.users.member, t.users.guest, t.users.owner]) {
      const name = assertSuccess(await t.api(t.users.owner, "GET", `/users/${user.id}`)).user.full_name as string;
      await cellIs(olivia, name, user.email);
    }
    assert.equal(await olivia.getByRole("table", { name: "Users" }).getByText(`@${t.services.config.fakeEmailDomain}`).count(), 0);
    // The user card says it too.
    await olivia.goto(`${t.url}/#people`);
    await peopleRow(olivia, "Max Member").getByRole("button", { name: "Max Member's card" }).click();
    const card = olivia.getByRole("dialog", { name: "Max Member" });
    await card.getByRole("link", { name: t.users.member.email }).waitFor();
    assert.deepEqual(h.pageErrors, []);
  });

  test("a member changes who may see their address in Settings › Profile; the owner's, an administrator's and another member's views follow live", async () => {
    const t = h.t;
    const max = t.users.member;
    const nina = await t.createUser("Nina Neighbour");
    const olivia = await openPage(t.users.owner, "#organization/organization-profile");
    const adam = await openPage(t.users.admin, "#people");
    const ninas = await openPage(nina, "#people");
    const maxs = await openPage(max, "#settings/profile");
    const select = maxs.getByLabel("Who can see my email address");

    // The default: administrators only.
    await waitFor("Max's setting shows 'Admins only'", async () => (await select.inputValue()) === "3");
    await cellIs(olivia, "Max Member", max.email);
    await peopleRow(adam, "Max Member").getByText(max.email).waitFor();
    await peopleRow(ninas, "Max Member").waitFor();
    assert.equal(await peopleRow(ninas, "Max Member").getByText("@").count(), 0);

    // Members too: Nina sees the address appear.
    await select.selectOption({ label: "Admins, moderators and members" });
    await peopleRow(ninas, "Max Member").getByText(max.email).waitFor();
    await maxs.getByText("Who can see my email address: saved.").waitFor();
    await cellIs(olivia, "Max Member", max.email);
    // Max's public email is still the fake one; Nina's new-DM dialog shows the real address she may now see.
    await ninas.goto(`${t.url}/#inbox`);
    await ninas.keyboard.press("x");
    const dm = ninas.getByRole("dialog", { name: "New direct message" });
    await dm.getByLabel("Find people").fill("max");
    await dm.getByRole("checkbox", { name: /Max Member/ }).waitFor();
    assert.equal((await dm.locator("label", { hasText: "Max Member" }).locator(".person-email").textContent())?.trim(), max.email);
    await ninas.keyboard.press("Escape");
    await dm.waitFor({ state: "hidden" });
    await ninas.goto(`${t.url}/#people`);
    await peopleRow(ninas, "Max Member").getByText(max.email).waitFor();

    // Nobody: gone from every view; the owner's table shows the public (fake) address.
    await select.selectOption({ label: "Nobody" });
    await cellIs(olivia, "Max Member", fakeEmail(max.id));
    await peopleRow(adam, "Max Member").getByText(max.email).waitFor({ state: "detached" });
    await peopleRow(ninas, "Max Member").getByText(max.email).waitFor({ state: "detached" });
    await waitFor("stored", async () => assertSuccess(await t.api(max, "GET", "/users/me")).email === fakeEmail(max.id));

    // Everyone: the real address is the public one again, everywhere.
    await select.selectOption({ label: "Admins, moderators, members and guests" });
    await cellIs(olivia, "Max Member", max.email);
    await peopleRow(adam, "Max Member").getByText(max.email).waitFor();
    await peopleRow(ninas, "Max Member").getByText(max.email).waitFor();
    assert.equal(assertSuccess(await t.api(max, "GET", "/users/me")).email, max.email);

    // The setting is Max's on every page load: from /register's user_settings.
    await maxs.reload();
    await waitFor("Max's setting after a reload", async () => (await maxs.getByLabel("Who can see my email address").inputValue()) === "1");
    await maxs.screenshot({ path: "/tmp/wt-e-settings-profile.png" });
    await olivia.getByRole("table", { name: "Users" }).screenshot({ path: "/tmp/wt-e-users-table.png" });
    await ninas.screenshot({ path: "/tmp/wt-e-people.png" });
    assert.deepEqual(h.pageErrors, []);
  });
});
