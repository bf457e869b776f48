"""The hostile-input table's rows that change only the case folder: each must be refused with
exit 2 and a message naming the file and the field (tests/unit/test_input_table.py)."""

from __future__ import annotations

import json
import shutil

from app.core.repo import SAMPLE_CASE
from tests.support.input_folder import (
    ESC,
    GIB,
    case_row,
    case_text,
    long_int,
    nested_json,
    proposal_text,
    replace_with_dir,
    replace_with_fifo,
    sample_case_text,
    sparse_file,
    symlink,
)

CASE_ROWS = [
    # --- the folder and its files: inside it, regular, bounded -------------------------------
    case_row("case folder missing", lambda f: shutil.rmtree(f.case), "no such directory"),
    case_row(
        "case folder is a file",
        lambda f: (shutil.rmtree(f.case), f.case.write_text("{}")),
        "not a case folder (it is a file)",
    ),
    case_row("case.json missing", lambda f: (f.case / "case.json").unlink(), "case.json: missing"),
    case_row(
        "case.json is a folder",
        lambda f: replace_with_dir(f.case / "case.json"),
        "case.json: is a folder, not a file",
    ),
    case_row(
        "case.json is a FIFO",
        lambda f: replace_with_fifo(f.case / "case.json"),
        "case.json: is a FIFO, not a file",
    ),
    case_row(
        "case.json links outside",
        lambda f: symlink(f.case / "case.json", "/etc/passwd"),
        "case.json: is a symbolic link; a case's files must lie inside its folder",
    ),
    case_row(
        "proposal links outside",
        lambda f: symlink(f.case / "proposals" / "harbor.json", "/etc/passwd"),
        "harbor.json: is a symbolic link",
    ),
    case_row(
        "proposal links inside the folder",
        lambda f: symlink(f.case / "proposals" / "harbor.json", "cedar.json"),
        "harbor.json: is a symbolic link",
    ),
    case_row(
        "proposals folder links elsewhere",
        lambda f: (
            shutil.copytree(f.case / "proposals", f.base / "elsewhere"),
            shutil.rmtree(f.case / "proposals"),
            symlink(f.case / "proposals", f.base / "elsewhere"),
        ),
        "proposals: is a symbolic link",
    ),
    case_row(
        "proposal is a folder",
        lambda f: replace_with_dir(f.case / "proposals" / "cedar.json"),
        "cedar.json: is a folder, not a file",
    ),
    case_row(
        "proposal is a FIFO",
        lambda f: replace_with_fifo(f.case / "proposals" / "cedar.json"),
        "cedar.json: is a FIFO, not a file",
    ),
    case_row(
        "proposal missing",
        lambda f: (f.case / "proposals" / "cedar.json").unlink(),
        "cedar.json: missing",
    ),
    case_row(
        "case.json of 3 GiB",
        lambda f: sparse_file(f.case / "case.json", 3 * GIB),
        f"case.json: {3 * GIB} bytes, more than the 262144 allowed",
    ),
    case_row(
        "proposal of 50 GiB",
        lambda f: sparse_file(f.case / "proposals" / "harbor.json", 50 * GIB),
        f"harbor.json: {50 * GIB} bytes, more than the 262144 allowed",
    ),
    # --- JSON that is not strict ---------------------------------------------------------------
    case_row(
        "case.json not UTF-8",
        lambda f: (f.case / "case.json").write_bytes(b'{"case_id": "rfp-\xff01"}'),
        "case.json: not UTF-8 text (byte 17 is 0xff)",
    ),
    case_row(
        "case.json in UTF-16",
        lambda f: (f.case / "case.json").write_bytes('{"case_id": "x"}'.encode("utf-16")),
        "case.json: not UTF-8 text (byte 0 is 0xff)",
    ),
    case_row(
        "case.json with a byte order mark",
        lambda f: (f.case / "case.json").write_bytes(b"\xef\xbb\xbf{}"),
        "case.json: invalid JSON (Unexpected UTF-8 BOM",
    ),
    case_row(
        "case.json nested 100000 deep",
        lambda f: case_text(f, nested_json(100_000)),
        "case.json: nested more than 16 levels deep",
    ),
    case_row(
        "a field nested 20 deep",
        lambda f: f.edit_case(lambda d: d.update(notes=json.loads(nested_json(20)))),
        "case.json: notes.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0: nested more than 16 levels deep",
    ),
    case_row(
        "price of 5000 digits",
        lambda f: sample_case_text(
            f, '"max_price_usd": 125000', f'"max_price_usd": {long_int(5000)}'
        ),
        "case.json: requirements.max_price_usd: an integer of 5000 digits; at most 15",
    ),
    case_row(
        "proposal price of 5000 digits",
        lambda f: proposal_text(
            f, "cedar", '"price_usd": 130000', f'"price_usd": {long_int(5000)}'
        ),
        "cedar.json: price_usd: an integer of 5000 digits",
    ),
    case_row(
        "NaN in case.json",
        lambda f: sample_case_text(f, '"max_delivery_days": 30', '"max_delivery_days": NaN'),
        "requirements.max_delivery_days: NaN is not a number JSON allows",
    ),
    case_row(
        "Infinity in a proposal",
        lambda f: proposal_text(f, "harbor", '"delivery_days": 45', '"delivery_days": -Infinity'),
        "harbor.json: delivery_days: -Infinity is not a number JSON allows",
    ),
    case_row(
        "a float too large to represent",
        lambda f: sample_case_text(f, '"min_warranty_months": 24', '"min_warranty_months": 1e999'),
        "requirements.min_warranty_months: the number 1e999 is too large to represent",
    ),
    case_row(
        "duplicate case_id",
        lambda f: sample_case_text(
            f, '"case_id": "rfp-001"', '"case_id": "rfp-001", "case_id": "x"'
        ),
        "case.json: the key case_id appears twice in one object",
    ),
    case_row(
        "invalid JSON",
        lambda f: case_text(f, '{"case_id": "rfp-001",'),
        "case.json: invalid JSON (Expecting property name enclosed in double quotes at line 1",
    ),
    case_row("empty case.json", lambda f: case_text(f, ""), "case.json: invalid JSON"),
    case_row(
        "case.json is a list",
        lambda f: case_text(f, "[]"),
        "case.json: document: Input should be an object",
    ),
    # --- the case contract ---------------------------------------------------------------------
    case_row(
        "case id with a space",
        lambda f: f.edit_case(lambda d: d.update(case_id="Bad Id")),
        "case.json: case_id: String should match pattern",
    ),
    case_row(
        "case id climbing out",
        lambda f: f.edit_case(lambda d: d.update(case_id="../etc")),
        "case_id: String should match pattern",
    ),
    case_row(
        "case id of 64 characters",
        lambda f: f.edit_case(lambda d: d.update(case_id="a" * 64)),
        "case_id: String should match pattern",
    ),
    case_row(
        "supplier id in capitals",
        lambda f: f.edit_case(lambda d: d["suppliers"][0].update(id="NORTHSTAR")),
        "suppliers.0.id: String should match pattern",
    ),
    case_row(
        "supplier ids repeated",
        lambda f: f.edit_case(lambda d: d["suppliers"].append(d["suppliers"][0])),
        "supplier ids must be unique",
    ),
    case_row(
        "proposal path elsewhere",
        lambda f: f.edit_case(lambda d: d["suppliers"][1].update(proposal="../harbor.json")),
        "proposal must be 'proposals/harbor.json'",
    ),
    case_row(
        "an extra field",
        lambda f: f.edit_case(lambda d: d.update(owner="x")),
        "case.json: owner: Extra inputs are not permitted",
    ),
    case_row(
        "an extra field named with escapes",
        lambda f: f.edit_case(lambda d: d.update({f"{ESC}[31mred": 1})),
        'case.json: "\\u001b[31mred": Extra inputs are not permitted',
    ),
    case_row(
        "requirements missing",
        lambda f: f.edit_case(lambda d: d.pop("requirements")),
        "case.json: requirements: Field required",
    ),
    case_row(
        "price as a string",
        lambda f: f.edit_case(lambda d: d["requirements"].update(max_price_usd="125000")),
        "requirements.max_price_usd: Input should be a valid integer",
    ),
    case_row(
        "price as true",
        lambda f: f.edit_case(lambda d: d["requirements"].update(max_price_usd=True)),
        "requirements.max_price_usd: Input should be a valid integer",
    ),
    case_row(
        "price as a fraction",
        lambda f: f.edit_case(lambda d: d["requirements"].update(max_price_usd=1.5)),
        "requirements.max_price_usd: Input should be a valid integer",
    ),
    case_row(
        "negative delivery",
        lambda f: f.edit_case(lambda d: d["requirements"].update(max_delivery_days=-1)),
        "requirements.max_delivery_days: Input should be greater than 0",
    ),
    case_row(
        "price over a trillion",
        lambda f: f.edit_case(lambda d: d["requirements"].update(max_price_usd=10**13)),
        "requirements.max_price_usd: Input should be less than or equal to 1000000000000",
    ),
    case_row(
        "title forging a headline",
        lambda f: f.edit_case(
            lambda d: d.update(title="x\n\n**Recommended supplier:** Harbor Freight (`harbor`)")
        ),
        "title: Value error, holds the control character U+000A",
    ),
    case_row(
        "supplier name forging a headline",
        lambda f: f.edit_case(
            lambda d: d["suppliers"][0].update(name="N\r\n**Recommended supplier:** Harbor")
        ),
        "suppliers.0.name: Value error, holds the control character U+000D",
    ),
    case_row(
        "supplier name with a terminal escape",
        lambda f: f.edit_case(lambda d: d["suppliers"][0].update(name=f"N{ESC}[2J")),
        "suppliers.0.name: Value error, holds the control character U+001B",
    ),
    case_row(
        "title reversed by a bidi override",
        lambda f: f.edit_case(lambda d: d.update(title="office \u202eevil")),
        "title: Value error, holds the control character U+202E",
    ),
    case_row(
        "title with a line separator",
        lambda f: f.edit_case(lambda d: d.update(title="office\u2028# heading")),
        "title: Value error, holds the control character U+2028",
    ),
    case_row(
        "empty title",
        lambda f: f.edit_case(lambda d: d.update(title="")),
        "title: String should have at least 1 character",
    ),
    case_row(
        "title of 501 characters",
        lambda f: f.edit_case(lambda d: d.update(title="t" * 501)),
        "title: String should have at most 500 characters",
    ),
    case_row(
        "no suppliers",
        lambda f: f.edit_case(lambda d: d.update(suppliers=[])),
        "case.json: suppliers: Tuple should have at least 1 item",
    ),
    case_row(
        "51 suppliers",
        lambda f: f.edit_case(
            lambda d: d.update(
                suppliers=[
                    {**d["suppliers"][0], "id": f"s{n}", "proposal": f"proposals/s{n}.json"}
                    for n in range(51)
                ]
            )
        ),
        "suppliers: Tuple should have at most 50 items",
    ),
    case_row(
        "proposal changed after the case was written",
        lambda f: (f.case / "proposals" / "cedar.json").write_text(
            (SAMPLE_CASE / "proposals" / "cedar.json").read_text().replace("130000", "99000")
        ),
        "cedar.json: sha256",
    ),
    case_row(
        "digest that is not hex",
        lambda f: f.edit_case(lambda d: d["suppliers"][0].update(sha256="z" * 64)),
        "suppliers.0.sha256: String should match pattern",
    ),
    case_row(
        "proposal naming another supplier",
        lambda f: f.edit_proposal("cedar", lambda d: d.update(supplier_id="harbor")),
        "cedar.json: supplier_id 'harbor', expected 'cedar'",
    ),
    case_row(
        "summary of 4001 characters",
        lambda f: f.edit_proposal("cedar", lambda d: d.update(summary="s" * 4001)),
        "cedar.json: summary: String should have at most 4000 characters",
    ),
    case_row(
        "summary with a terminal escape",
        lambda f: f.edit_proposal("cedar", lambda d: d.update(summary=f"fine{ESC}]0;title\x07")),
        "cedar.json: summary: Value error, holds the control character U+001B",
    ),
    case_row(
        "proposal with an extra field",
        lambda f: f.edit_proposal("harbor", lambda d: d.update(discount=5)),
        "harbor.json: discount: Extra inputs are not permitted",
    ),
    # --- the optional availability file ------------------------------------------------------
    case_row(
        "availability is a list",
        lambda f: f.write_availability("[]"),
        "supplier-availability.json: must be an object mapping each supplier id",
    ),
    case_row(
        "availability misses a supplier",
        lambda f: f.write_availability('{"northstar": true, "harbor": true}'),
        "supplier-availability.json: cedar: missing",
    ),
    case_row(
        "availability names a stranger",
        lambda f: f.write_availability(
            '{"northstar": true, "harbor": true, "cedar": true, "acme": true}'
        ),
        "supplier-availability.json: acme: not a supplier of this case",
    ),
    case_row(
        "availability as a string",
        lambda f: f.write_availability('{"northstar": "true", "harbor": true, "cedar": true}'),
        "supplier-availability.json: northstar: must be true or false",
    ),
    case_row(
        "availability said twice",
        lambda f: f.write_availability(
            '{"northstar": true, "harbor": true, "cedar": true, "cedar": false}'
        ),
        "supplier-availability.json: the key cedar appears twice",
    ),
    case_row(
        "availability links outside",
        lambda f: symlink(f.case / "supplier-availability.json", "/etc/hostname"),
        "supplier-availability.json: is a symbolic link",
    ),
    case_row(
        "availability link dangling",
        lambda f: symlink(f.case / "supplier-availability.json", "/nonexistent"),
        "supplier-availability.json: is a symbolic link",
    ),
    case_row(
        "availability is a folder",
        lambda f: (f.case / "supplier-availability.json").mkdir(),
        "supplier-availability.json: is a folder, not a file",
    ),
]
