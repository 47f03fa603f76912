import { useQuery } from "@tanstack/react-query";
import { useEffect, useRef, useState, type FormEvent } from "react";
import { api, errorMessage, type Schemas } from "../api/client";
import { queryClient } from "../api/queries";
import { counted } from "../format";

type Source = Schemas["SourceRead"];
type Kind = Schemas["SourceKind"];

const INTERVALS: { minutes: number | null; label: string }[] = [
  { minutes: 15, label: "every 15 minutes" },
  { minutes: 60, label: "every hour" },
  { minutes: 24 * 60, label: "every day" },
  { minutes: null, label: "only when I ask" },
];

const SETTINGS: Record<Kind, string[]> = {
  folder: ["path"],
  s3: ["bucket", "prefix", "endpoint_url", "region"],
  git: ["url", "ref", "folder"],
  website: ["url", "max_pages", "path_prefix"],
};
const SECRETS: Record<Kind, string[]> = {
  folder: [],
  s3: ["access_key_id", "secret_access_key"],
  git: ["username", "token"],
  website: [],
};

/** Where a source's files come from, in a line. */
function place(source: Source): string {
  const settings = source.settings;
  if (source.kind === "s3") return `s3://${settings.bucket}/${settings.prefix ?? ""}`;
  if (source.kind === "website") return settings.url ?? "";
  if (source.kind === "git") return `${settings.url} @ ${settings.ref ?? "main"}${settings.folder ? ` /${settings.folder}` : ""}`;
  return settings.path ?? "";
}

function sourcesKey(collectionId: string) {
  return ["collection", collectionId, "sources"] as const;
}

/** "synced 10:42 · 3 added, 1 changed, 2 failed" or the progress of a sync under way. */
function summary(source: Source): string {
  const progress = source.progress as Record<string, number | undefined>;
  const counts = (["added", "changed", "removed", "failed"] as const)
    .filter((name) => (progress[name] ?? 0) > 0)
    .map((name) => `${progress[name]} ${name}`);
  if (source.state === "syncing") {
    const done = progress.done ?? 0;
    const toDo = progress.to_do ?? 0;
    return `syncing${toDo ? ` ${done} of ${toDo}` : "…"}${counts.length ? ` · ${counts.join(", ")}` : ""}`;
  }
  if (source.state === "paused") return "paused";
  const when = source.last_finished_at ? `synced ${new Date(source.last_finished_at).toLocaleString()}` : "not synced yet";
  const unchanged = progress.unchanged ? `${progress.unchanged} unchanged` : "";
  return [when, [...counts, unchanged].filter(Boolean).join(", ")].filter(Boolean).join(" · ");
}

function FailedItems({ source }: { source: Source }) {
  const failed =
    useQuery({
      queryKey: [...sourcesKey(source.collection_id), source.id, "failed"],
      queryFn: async () =>
        (await api.GET("/api/v1/sources/{source_id}/items", { params: { path: { source_id: source.id }, query: { failed: true, limit: 50 } } })).data
          ?.items ?? [],
    }).data ?? [];
  return (
    <ul className="small" aria-label={`Files ${source.name} could not bring in`}>
      {failed.map((item) => (
        <li key={item.key}>
          <code>{item.key}</code> <span className="muted">— {item.error}</span>
        </li>
      ))}
    </ul>
  );
}

function AddSource({ collectionId, isAdmin, onAdded }: { collectionId: string; isAdmin: boolean; onAdded(): void }) {
  const [kind, setKind] = useState<Kind>("s3");
  const [name, setName] = useState("");
  const [fields, setFields] = useState<Record<string, string>>({});
  const [minutes, setMinutes] = useState<number | null>(60);
  const [error, setError] = useState<string | null>(null);
  const field = (key: string) => ({
    value: fields[key] ?? "",
    onChange: (event: { target: { value: string } }) => setFields({ ...fields, [key]: event.target.value }),
  });

  async function add(event: FormEvent) {
    event.preventDefault();
    setError(null);
    const settingNames = SETTINGS[kind];
    const settings = Object.fromEntries(settingNames.filter((key) => fields[key]?.trim()).map((key) => [key, fields[key].trim()]));
    const given = SECRETS[kind].filter((key) => fields[key]);
    const secrets = given.length ? Object.fromEntries(given.map((key) => [key, fields[key]])) : null;
    const { error: failure } = await api.POST("/api/v1/collections/{collection_id}/sources", {
      params: { path: { collection_id: collectionId } },
      body: { name, kind, settings, secrets, interval_minutes: minutes },
    });
    if (failure) {
      setError(errorMessage(failure, "The source could not be added"));
      return;
    }
    setName("");
    setFields({});
    onAdded();
  }

  return (
    <form className="stack" onSubmit={(event) => void add(event)} aria-label="Add a source">
      <div className="row wrap">
        <label>
          Kind
          <select value={kind} onChange={(e) => setKind(e.target.value as Kind)}>
            <option value="s3">S3 bucket</option>
            <option value="git">Git repository</option>
            <option value="website">Website</option>
            {isAdmin && <option value="folder">Folder on the server</option>}
          </select>
        </label>
        <label className="grow">
          Name
          <input required maxLength={200} placeholder="Team wiki" value={name} onChange={(e) => setName(e.target.value)} />
        </label>
        <label>
          Sync
          <select value={minutes ?? ""} onChange={(e) => setMinutes(e.target.value ? Number(e.target.value) : null)}>
            {INTERVALS.map((option) => (
              <option key={option.label} value={option.minutes ?? ""}>
                {option.label}
              </option>
            ))}
          </select>
        </label>
      </div>
      {kind === "folder" && (
        <label>
          Folder
          <input required placeholder="/srv/shared/handbooks" {...field("path")} />
        </label>
      )}
      {kind === "git" && (
        <>
          <div className="row wrap">
            <label className="grow">
              Repository address
              <input type="url" required placeholder="https://git.example.com/team/handbook.git" {...field("url")} />
            </label>
            <label>
              Branch or tag
              <input placeholder="main" {...field("ref")} />
            </label>
            <label>
              Folder in it <span className="muted small">(optional)</span>
              <input placeholder="docs" {...field("folder")} />
            </label>
          </div>
          <div className="row wrap">
            <label>
              User name <span className="muted small">(if the server wants one)</span>
              <input autoComplete="off" {...field("username")} />
            </label>
            <label className="grow">
              Access token <span className="muted small">(private repositories; stored encrypted, never shown again)</span>
              <input type="password" autoComplete="new-password" {...field("token")} />
            </label>
          </div>
        </>
      )}
      {kind === "website" && (
        <div className="row wrap">
          <label className="grow">
            Start page or sitemap <span className="muted small">(the pages below its folder are taken)</span>
            <input type="url" required placeholder="https://intranet.example.com/handbook/" {...field("url")} />
          </label>
          <label>
            At most pages
            <input type="number" min={1} placeholder="200" {...field("max_pages")} />
          </label>
        </div>
      )}
      {kind === "s3" && (
        <>
          <div className="row wrap">
            <label className="grow">
              Bucket
              <input required placeholder="team-docs" {...field("bucket")} />
            </label>
            <label className="grow">
              Prefix <span className="muted small">(optional)</span>
              <input placeholder="wiki/" {...field("prefix")} />
            </label>
          </div>
          <div className="row wrap">
            <label className="grow">
              Endpoint <span className="muted small">(MinIO and others; empty for AWS)</span>
              <input type="url" placeholder="https://minio.example.com" {...field("endpoint_url")} />
            </label>
            <label>
              Region
              <input placeholder="us-east-1" {...field("region")} />
            </label>
          </div>
          <div className="row wrap">
            <label className="grow">
              Access key ID
              <input autoComplete="off" {...field("access_key_id")} />
            </label>
            <label className="grow">
              Secret access key <span className="muted small">(stored encrypted, never shown again)</span>
              <input type="password" autoComplete="new-password" {...field("secret_access_key")} />
            </label>
          </div>
        </>
      )}
      {error && (
        <p role="alert" className="error small">
          {error}
        </p>
      )}
      <div>
        <button type="submit" className="primary">
          Add source
        </button>
      </div>
    </form>
  );
}

/** A collection's sources: where its files come from, each sync's counts and failures, and
 * (for its owners) adding, syncing, pausing and removing them. */
export default function CollectionSources({ collectionId, isOwner, isAdmin, onChanged }: { collectionId: string; isOwner: boolean; isAdmin: boolean; onChanged(): void }) {
  const [adding, setAdding] = useState(false);
  const [showFailed, setShowFailed] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const key = sourcesKey(collectionId);
  const sources =
    useQuery({
      queryKey: key,
      queryFn: async () => (await api.GET("/api/v1/collections/{collection_id}/sources", { params: { path: { collection_id: collectionId } } })).data ?? [],
      // Only while a sync is due or under way: its progress, then the new documents.
      refetchInterval: (query) =>
        (query.state.data ?? []).some((source) => source.state === "syncing" || (source.next_sync_at && new Date(source.next_sync_at) <= new Date()))
          ? 2000
          : false,
    }).data ?? [];
  const load = async () => {
    await queryClient.invalidateQueries({ queryKey: key });
    onChanged();
  };
  // A sync that moved on brought documents in or took them out: show the collection's anew.
  const moved = sources
    .map((source) => `${source.id}:${source.state}:${source.last_finished_at ?? ""}:${String(source.progress.done ?? "")}`)
    .join();
  const seen = useRef(moved);
  useEffect(() => {
    if (seen.current !== moved) onChanged();
    seen.current = moved;
  }, [moved, onChanged]);

  async function run(action: Promise<{ error?: unknown }>, fallback: string) {
    setError(null);
    const { error: failure } = await action;
    if (failure) setError(errorMessage(failure, fallback));
    await load();
  }

  function remove(source: Source) {
    if (!window.confirm(`Remove the source “${source.name}”?`)) return;
    const keep = window.confirm(`Keep the documents “${source.name}” brought in? OK keeps them in the collection; Cancel deletes them too.`);
    void run(
      api.DELETE("/api/v1/sources/{source_id}", { params: { path: { source_id: source.id }, query: { keep_documents: keep } } }),
      "The source could not be removed",
    );
  }

  if (!isOwner && sources.length === 0) return null;
  return (
    <>
      <h3>Sources ({sources.length})</h3>
      {error && (
        <p role="alert" className="error">
          {error}
        </p>
      )}
      <ul className="plain" aria-label="Sources">
        {sources.map((source) => {
          const path = { source_id: source.id };
          const failed = Number((source.progress as Record<string, number>).failed ?? 0);
          return (
            <li key={source.id} className="sync-source">
              <div className="row wrap">
                <span className="grow">
                  <strong>{source.name}</strong>{" "}
                  <span className="muted small">{place(source)}</span>
                </span>
                <span className={`badge ${source.state}`}>{source.state}</span>
              </div>
              <p className="small muted" aria-live="polite">
                {summary(source)}
                {source.state !== "paused" && source.next_sync_at && ` · next ${new Date(source.next_sync_at).toLocaleString()}`}
              </p>
              {source.last_error && <p className="small error">{source.last_error}</p>}
              {failed > 0 && (
                <button type="button" className="link small" onClick={() => setShowFailed(showFailed === source.id ? null : source.id)}>
                  {showFailed === source.id ? "Hide" : "Show"} {counted(failed, "file")} not brought in
                </button>
              )}
              {showFailed === source.id && <FailedItems source={source} />}
              {isOwner && (
                <div className="row wrap">
                  <button type="button" disabled={source.state === "syncing" || source.state === "paused"} onClick={() => void run(api.POST("/api/v1/sources/{source_id}/sync", { params: { path } }), "Could not start a sync")}>
                    Sync now
                  </button>
                  <button
                    type="button"
                    onClick={() => void run(api.PATCH("/api/v1/sources/{source_id}", { params: { path }, body: { paused: source.state !== "paused" } }), "Could not change it")}
                  >
                    {source.state === "paused" ? "Resume" : "Pause"}
                  </button>
                  <button type="button" className="danger-text" onClick={() => remove(source)} aria-label={`Remove the source ${source.name}`}>
                    Remove
                  </button>
                </div>
              )}
            </li>
          );
        })}
        {sources.length === 0 && <li className="muted">No sources: files are added one by one.</li>}
      </ul>
      {isOwner &&
        (adding ? (
          <AddSource
            collectionId={collectionId}
            isAdmin={isAdmin}
            onAdded={() => {
              setAdding(false);
              void load();
            }}
          />
        ) : (
          <button type="button" onClick={() => setAdding(true)}>
            Add a source…
          </button>
        ))}
    </>
  );
}
