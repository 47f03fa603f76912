import { QueryClient, QueryClientProvider } from "@tanstack/react-query";
import { act, cleanup, renderHook, waitFor } from "@testing-library/react";
import type { ReactNode } from "react";
import { afterEach, describe, expect, it, vi } from "vitest";
import { failureText, latestFailure, unwrap, useWrite } from "./mutations";

afterEach(cleanup);

const refused = (status: number, error: unknown) => Promise.resolve({ error, response: new Response(null, { status }) });

describe("unwrap", () => {
  it("gives the data of a call that succeeded", async () => {
    await expect(unwrap(Promise.resolve({ data: 3, response: new Response(null, { status: 200 }) }), "no")).resolves.toBe(3);
  });

  it("throws the server's reason, or the fallback when it gave none", async () => {
    await expect(unwrap(refused(409, { detail: "That name is taken" }), "Not saved")).rejects.toThrow("That name is taken");
    await expect(unwrap(refused(422, { detail: [{ msg: "Too long" }] }), "Not saved")).rejects.toThrow("Too long");
    await expect(unwrap(refused(500, ""), "Not saved")).rejects.toThrow("Not saved");
  });
});

describe("useWrite", () => {
  function setUp() {
    const client = new QueryClient();
    const invalidate = vi.spyOn(client, "invalidateQueries");
    const wrapper = ({ children }: { children: ReactNode }) => <QueryClientProvider client={client}>{children}</QueryClientProvider>;
    return { invalidate, wrapper };
  }

  it("tells its owner it settled even when the view that sent it has gone", async () => {
    const { wrapper } = setUp();
    let finish: (value: number) => void = () => {};
    const settled = vi.fn();
    const toldByMutate = vi.fn();
    const started = vi.fn();
    const write = () => {
      started();
      return new Promise<number>((resolve) => (finish = resolve));
    };
    const { result, unmount } = renderHook(() => useWrite({ write, onSettled: settled }), { wrapper });
    act(() => result.current.mutate(undefined, { onSettled: toldByMutate }));
    await waitFor(() => expect(started).toHaveBeenCalled());
    unmount(); // a rename saved on blur while the reader opens another chat
    await act(async () => finish(1));
    await waitFor(() => expect(settled).toHaveBeenCalledTimes(1));
    // What the header and the settings used before: TanStack Query skips it once unmounted.
    expect(toldByMutate).not.toHaveBeenCalled();
  });

  it("reads the keys it changes again once it succeeded, not when it failed", async () => {
    const { invalidate, wrapper } = setUp();
    const { result } = renderHook(
      () => useWrite({ write: async (fail: boolean) => (fail ? Promise.reject(new Error("Refused")) : 1), invalidates: [["chats"]] }),
      { wrapper },
    );
    await act(async () => result.current.mutate(true));
    await waitFor(() => expect(result.current.isError).toBe(true));
    expect(failureText(result.current.error)).toBe("Refused");
    expect(invalidate).not.toHaveBeenCalled();
    await act(async () => result.current.mutate(false));
    await waitFor(() => expect(result.current.isSuccess).toBe(true));
    expect(invalidate).toHaveBeenCalledWith({ queryKey: ["chats"] });
  });

  it("shows the failure of the last write sent among several, none once that one succeeded", async () => {
    const { wrapper } = setUp();
    const { result } = renderHook(
      () => ({
        first: useWrite({ write: async () => Promise.reject(new Error("First refused")) }),
        second: useWrite({ write: async (fail: boolean) => (fail ? Promise.reject(new Error("Second refused")) : 2) }),
      }),
      { wrapper },
    );
    expect(latestFailure(result.current.first, result.current.second)).toBeNull();
    await act(async () => result.current.first.mutate());
    await waitFor(() => expect(latestFailure(result.current.first, result.current.second)).toBe("First refused"));
    await act(async () => result.current.second.mutate(true));
    await waitFor(() => expect(latestFailure(result.current.first, result.current.second)).toBe("Second refused"));
    await act(async () => result.current.second.mutate(false));
    await waitFor(() => expect(result.current.second.isSuccess).toBe(true));
    expect(latestFailure(result.current.first, result.current.second)).toBeNull();
  });
});
