"""docscraper's item pipelines, one job each, in ``ITEM_PIPELINES`` order.

 50 :class:`~pipelines.mirror.MirrorPipeline` writes the Markdown mirror (``-a save_dir``), when on;
100 :class:`~pipelines.change_detection.ChangeDetectionPipeline` drops unchanged pages;
900 :class:`~pipelines.state_commit.StateCommitPipeline` commits the page's state row last.
"""
