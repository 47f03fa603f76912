import { QueryClient, QueryClientProvider } from "@tanstack/react-query";
import { cleanup, fireEvent, render, screen } from "@testing-library/react";
import { afterEach, describe, expect, it, vi } from "vitest";
import PasswordForm from "./PasswordForm";

afterEach(() => {
  cleanup();
  vi.unstubAllGlobals();
  localStorage.clear();
});

function answer(status: number, body: unknown): Response {
  return new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json" } });
}

function fill() {
  const onChanged = vi.fn();
  render(
    <QueryClientProvider client={new QueryClient()}>
      <PasswordForm onChanged={onChanged} />
    </QueryClientProvider>,
  );
  fireEvent.change(screen.getByLabelText("Current password"), { target: { value: "old-secret" } });
  fireEvent.change(screen.getByLabelText("New password"), { target: { value: "new-secret-1" } });
  fireEvent.submit(screen.getByRole("form", { name: "Change password" }));
  return onChanged;
}

describe("a write's failure (PasswordForm)", () => {
  it("shows the server's reason, and changes nothing", async () => {
    vi.stubGlobal("fetch", vi.fn(async () => answer(400, { detail: "The current password is wrong" })));
    const onChanged = fill();
    expect((await screen.findByRole("alert")).textContent).toBe("The current password is wrong");
    expect(onChanged).not.toHaveBeenCalled();
    expect(screen.queryByRole("status")).toBeNull();
    expect((screen.getByRole("button", { name: "Change password" }) as HTMLButtonElement).disabled).toBe(false);
  });

  it("says what failed when the server gives no reason", async () => {
    vi.stubGlobal("fetch", vi.fn(async () => answer(500, null)));
    fill();
    expect((await screen.findByRole("alert")).textContent).toBe("The password could not be changed");
  });

  it("keeps the new tokens and says so once it succeeded", async () => {
    vi.stubGlobal("fetch", vi.fn(async () => answer(200, { access_token: "a", refresh_token: "r" })));
    const onChanged = fill();
    expect((await screen.findByRole("status")).textContent).toContain("Password changed");
    expect(onChanged).toHaveBeenCalled();
    expect(screen.queryByRole("alert")).toBeNull();
  });
});
