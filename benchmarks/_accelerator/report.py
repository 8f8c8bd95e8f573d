"""The check's JSON and its short table."""

import json
import os


def peak_tflops(rows):
    for row in rows:
        if row["item"] == "matmul bfloat16" and "value" in row:
            return row["value"]
    return None


def outcome(row):
    if "skipped" in row:
        return f"skipped ({row['skipped']})"
    if "error" in row:
        return f"ERROR {row['error']}"
    value = row.get("value")
    text = f"{value:.3g}" if isinstance(value, float) and value < 1 else f"{value}"
    text = f"{text} {row.get('unit', '')}".strip()
    if "passed" in row:
        text += "  PASS" if row["passed"] else "  FAIL"
    return text


def speed_ratios(rows):
    """Each of our speed rows against the peer rows of the same model (BERT
    for the text models), mode and precision: our value / the peer's."""
    peers = {}
    for row in rows:
        if row.get("runner", "").startswith(("timm", "bert")) and "value" in row:
            key = (row["model"], row["mode"], row["precision"])
            peers.setdefault(key, {})[row["runner"]] = row["value"]
    lines = []
    for row in rows:
        if row.get("runner", "").startswith("keras") and "value" in row:
            key = _peer_key((row["model"], row["mode"], row["precision"]))
            ratios = ", ".join(
                f"{row['value'] / value:.2f}x {worker}"
                for worker, value in sorted(peers.get(key, {}).items())
            )
            lines.append(f"{row['worker']:<18} {row['item']:<48} {ratios or '-'}")
    return lines


def _peer_key(key):
    """The peer's (model, mode, precision) for ours: BERT for the text models."""
    model, mode, precision = key
    return (
        "bert_base" if model in ("gmlp_base", "amlp_base") else model,
        mode,
        precision,
    )


def table(rows):
    """One line a result, the MFU of speed rows, then ours against the peers."""
    peak = peak_tflops(rows)
    lines = [f"{'section':<10} {'worker':<18} {'item':<48} result"]
    for row in rows:
        text = outcome(row)
        if peak and "tflops" in row:
            text += f"  ({row['tflops']} TFLOP/s, MFU {row['tflops'] / peak:.1%})"
        lines.append(
            f"{row['section']:<10} {row['worker']:<18} {row['item']:<48} {text}"
        )
    lines += [
        "",
        "ours / peer, same model (BERT-base for the text models), mode and precision:",
    ]
    return "\n".join(lines + speed_ratios(rows))


def row_key(row):
    return f"{row['worker']} {row['item']}"


def measured(row):
    return "skipped" not in row and "error" not in row


def merge(documents):
    """One document from the rows of several runs on one card: for each row,
    the last run's result, unless it did not measure one and an earlier
    run did. The hosts are listed; `merged_from` names the runs."""
    rows, hosts = {}, []
    for document in documents:
        hosts.append(document.get("host", {}))
        for row in document["results"]:
            key = row_key(row)
            if key not in rows or measured(row) or not measured(rows[key]):
                rows[key] = row
    gpus = sorted({str(host.get("gpu")) for host in hosts})
    host = dict(hosts[-1], merged_from=len(documents))
    if len(gpus) > 1:
        host["warning"] = f"rows from different devices: {gpus}"
    return host, list(rows.values())


def write(out_dir, host, rows):
    """accelerator.json and accelerator.txt in `out_dir`, each written
    under a temporary name and then renamed."""
    failed = [r["item"] for r in rows if r.get("passed") is False or "error" in r]
    document = dict(host=host, failed=failed, results=rows)
    text = table(rows)
    for name, content in (
        ("accelerator.json", json.dumps(document, indent=1)),
        ("accelerator.txt", text),
    ):
        path = os.path.join(out_dir, name)
        with open(path + ".partial", "w") as file:
            file.write(content + "\n")
        os.replace(path + ".partial", path)
    return text, failed
