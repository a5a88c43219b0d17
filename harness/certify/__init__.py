"""`kafka-chaos certify`: one resumable campaign that runs what the project knows against a
new build and its previous release, and says in one page what changed (issue 46 items 1
and 3; docs/CERTIFY.md).

One module per job:

- plan.py: the budget rule (each part's share, overrides), the scenario sets and their order;
- upgrade.py: the upgrade-path scenarios, made from a template with the two builds;
- state.py: the campaign directory's bookkeeping (certify-state.json): what is done, resume;
- parts.py: each part run through the library functions of run, diff and hunt;
- compare.py: the release's answer from the parts' records (pure: regressions, fixes, ...);
- render.py: certify.md, certify.json, certify.html and junit.xml.
"""
