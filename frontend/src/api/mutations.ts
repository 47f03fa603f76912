// Writes: each goes through a TanStack Query mutation, with one way to fail (an Error whose
// message is what the reader is shown) and the cached reads it changes refetched on success.
import { useMutation, useQueryClient, type QueryKey, type UseMutationResult } from "@tanstack/react-query";
import { errorMessage } from "./client";

/** What an openapi-fetch call resolves to: the data, or the error body the server sent. */
export interface ApiAnswer<T = unknown> {
  data?: T;
  error?: unknown;
  response: Response;
}

/** The data of a call that succeeded; a refused one throws an Error saying why (the server's
 * words, or `failure` when it gave none). */
export async function unwrap<T>(answer: Promise<ApiAnswer<T>>, failure: string): Promise<T> {
  const { data, error, response } = await answer;
  if (!response.ok || error !== undefined) throw new Error(errorMessage(error, failure));
  return data as T;
}

/** The message a failed write shows. */
export function failureText(error: unknown, fallback = "That did not work"): string {
  return error instanceof Error && error.message ? error.message : fallback;
}

/** Among a view's writes, the last one sent: its failure is what the view shows (null while it
 * runs or once it succeeded), as one status line for all of them. */
export function latestFailure(...writes: Pick<UseMutationResult<unknown, Error, never>, "error" | "submittedAt">[]): string | null {
  const latest = writes.reduce<(typeof writes)[number] | null>(
    (found, write) => (write.submittedAt && (!found || write.submittedAt >= found.submittedAt) ? write : found),
    null,
  );
  return latest?.error ? failureText(latest.error) : null;
}

interface WriteOptions<TData, TVariables> {
  write(variables: TVariables): Promise<TData>;
  /** The cached reads (keys from queries.ts) this write changes: read again once it succeeds. */
  invalidates?: readonly QueryKey[];
  /** Also after a failure: a refused write may still have changed something (or the view
   * shows the server's current state either way). */
  invalidateOnError?: boolean;
  onSuccess?(data: TData, variables: TVariables): void;
  onError?(error: Error, variables: TVariables): void;
  /** After either: here, not in `mutate(..., { onSettled })`, which TanStack Query skips for a
   * view that has gone (a rename saved on blur while the reader moves on). */
  onSettled?(): void;
}

/** A write as a mutation: `mutate(variables)`, `isPending` while it runs, `error` once it failed
 * (`failureText(error)` or `latestFailure(...)` is its message). */
export function useWrite<TData = unknown, TVariables = void>({
  write,
  invalidates = [],
  invalidateOnError = false,
  onSuccess,
  onError,
  onSettled,
}: WriteOptions<TData, TVariables>): UseMutationResult<TData, Error, TVariables> {
  const client = useQueryClient();
  const refresh = () => Promise.all(invalidates.map((queryKey) => client.invalidateQueries({ queryKey })));
  return useMutation<TData, Error, TVariables>({
    mutationFn: (variables) => write(variables),
    // Awaited: the mutation settles once the changed reads are fresh.
    onSuccess: async (data, variables) => {
      onSuccess?.(data, variables);
      await refresh();
    },
    onError: async (error, variables) => {
      onError?.(error, variables);
      if (invalidateOnError) await refresh();
    },
    onSettled: () => onSettled?.(),
  });
}
