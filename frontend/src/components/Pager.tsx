/** Previous/next through a paged list (`skip`/`limit`/`total` as every list endpoint answers). */
export default function Pager({
  skip,
  limit,
  total,
  onSkip,
  label,
  empty,
  previous = "Previous",
  next = "Next",
}: {
  skip: number;
  limit: number;
  total: number;
  onSkip: (skip: number) => void;
  label: string;
  empty: string;
  previous?: string;
  next?: string;
}) {
  return (
    <nav className="row" aria-label={label}>
      <button type="button" disabled={skip === 0} onClick={() => onSkip(Math.max(0, skip - limit))}>
        {previous}
      </button>
      <span className="muted">{total === 0 ? empty : `${skip + 1}–${Math.min(skip + limit, total)} of ${total}`}</span>
      <button type="button" disabled={skip + limit >= total} onClick={() => onSkip(skip + limit)}>
        {next}
      </button>
    </nav>
  );
}
