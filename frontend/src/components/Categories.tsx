import { useState, type FormEvent } from "react";
import { api } from "../api/client";
import { latestFailure, unwrap, useWrite } from "../api/mutations";
import { keys, useCategories } from "../api/queries";
import { useModalDialog } from "../dialogs";

/** The user's categories, to add, rename and delete in place (a dialog; no browser prompt).
 * Deleting one keeps its chats: they are left without a category. */
export default function Categories({ open, onClose }: { open: boolean; onClose(): void }) {
  const dialog = useModalDialog(open);
  const [name, setName] = useState("");
  const [renaming, setRenaming] = useState<string | null>(null);
  const categories = useCategories();
  // The chats show their category: they are read again with the categories, failed or not.
  const changes = { invalidates: [keys.categories, keys.chats], invalidateOnError: true };
  const create = useWrite({
    write: (trimmed: string) => unwrap(api.POST("/api/v1/categories", { body: { name: trimmed } }), "The category could not be created"),
    onSuccess: () => setName(""),
    ...changes,
  });
  const update = useWrite({
    write: ({ id, trimmed }: { id: string; trimmed: string }) =>
      unwrap(
        api.PATCH("/api/v1/categories/{category_id}", { params: { path: { category_id: id } }, body: { name: trimmed } }),
        "The category could not be renamed",
      ),
    ...changes,
  });
  const destroy = useWrite({
    write: (id: string) =>
      unwrap(api.DELETE("/api/v1/categories/{category_id}", { params: { path: { category_id: id } } }), "The category could not be deleted"),
    ...changes,
  });
  const problem = latestFailure(create, update, destroy);

  function add(event: FormEvent) {
    event.preventDefault();
    const trimmed = name.trim();
    if (trimmed) create.mutate(trimmed);
  }

  function rename(id: string, before: string, text: string) {
    setRenaming(null);
    const trimmed = text.trim();
    if (trimmed && trimmed !== before) update.mutate({ id, trimmed });
  }

  return (
    <dialog ref={dialog} className="categories" aria-labelledby="categories-title" onClose={onClose}>
      <h2 id="categories-title">Categories</h2>
      <p className="muted small">Deleting a category keeps its chats; they are then in no category.</p>
      {problem && (
        <p role="alert" className="error small">
          {problem}
        </p>
      )}
      <ul className="category-list">
        {categories.map((category) => (
          <li key={category.id}>
            {renaming === category.id ? (
              <input
                defaultValue={category.name}
                aria-label={`New name for ${category.name}`}
                maxLength={100}
                autoFocus
                onBlur={(event) => rename(category.id, category.name, event.currentTarget.value)}
                onKeyDown={(event) => {
                  if (event.key === "Enter") rename(category.id, category.name, event.currentTarget.value);
                  if (event.key === "Escape") {
                    event.preventDefault(); // cancels the rename, not the dialog
                    setRenaming(null);
                  }
                }}
              />
            ) : (
              <span className="grow">{category.name}</span>
            )}
            <button className="link small" onClick={() => setRenaming(category.id)} aria-label={`Rename ${category.name}`}>
              Rename
            </button>
            <button className="link small danger-text" onClick={() => destroy.mutate(category.id)} aria-label={`Delete ${category.name}`}>
              Delete
            </button>
          </li>
        ))}
        {!categories.length && <li className="muted">No categories yet.</li>}
      </ul>
      <form className="row" onSubmit={add}>
        <label className="grow">
          <span className="sr-only">New category</span>
          <input value={name} onChange={(event) => setName(event.target.value)} placeholder="New category" maxLength={100} />
        </label>
        <button type="submit" disabled={!name.trim()}>
          Add
        </button>
      </form>
      <button className="primary" onClick={onClose}>
        Done
      </button>
    </dialog>
  );
}
