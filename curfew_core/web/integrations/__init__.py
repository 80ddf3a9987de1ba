"""The Integrations section (``/integrations/``): access keys, the capsule
embed, each tool's setup snippets, and the decision preview (``decision``)."""
