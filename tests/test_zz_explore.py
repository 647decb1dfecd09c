import asyncio, json
from test_browser import lab, browser, write_notebook, open_in_jupyterlab  # noqa
from test_jupyter_server import person_in_jupyterlab

async def test_explore(lab):
    url, root, log, chromium = lab
    write_notebook(root / "focus.ipynb", "a = 1", "b = 2\nprint(b)", "c = 3")
    async with browser(chromium) as b:
        page = await open_in_jupyterlab(b, url, "focus.ipynb")
        cells = page.locator(".jp-NotebookPanel .jp-Cell")
        async with person_in_jupyterlab(url, "focus.ipynb") as nb:
            await asyncio.sleep(1)
            await cells.nth(1).locator(".cm-content").click()
            await page.keyboard.press("End")
            await page.keyboard.press("Shift+Home")
            await asyncio.sleep(2)
            for cid, st in nb.awareness.states.items():
                print("STATE", cid, json.dumps(st, default=str)[:3000])
            print("CELLS", [ (c.get("id"), ) for c in nb.get()["cells"]])
